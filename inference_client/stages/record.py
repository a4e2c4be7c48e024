"""The record stage: the end of a request."""

from __future__ import annotations

import time

from redis.exceptions import RedisError

from core.redis import enabled as redis_enabled
from inference_client import generation_log, prompt_cache, usage
from inference_client import metrics as m
from inference_client.completion import Completion
from inference_client.stages.admit import release
from inference_client.stages.call import Call


async def record(completion: Completion, call: Call, terminal: dict) -> None:
    """Its usage record, its exact token charge (a failed generation is
    refunded in full), its slot, the cache and metrics."""
    principal, model, prompt_ref = call.principal, call.model, call.prompt_ref
    result = terminal.get("result") if terminal["type"] == "done" else None
    latency = time.monotonic() - completion.started
    code = terminal.get("code", "")
    status = "ok" if result else ("cancelled" if code == "cancelled" else "error")
    row = dict(
        user_id=principal.user.pk, api_key_id=principal.api_key.pk if principal.api_key else None,
        request_id=completion.request_id, model=model, version=call.version, tier=principal.tier,
        prompt_tokens=result["prompt_tokens"] if result else 0,
        completion_tokens=result["completion_tokens"] if result else 0,
        latency_ms=int(latency * 1000),
        ttft_ms=int(completion.ttft_s * 1000) if completion.ttft_s is not None else None,
        cache_hit=completion.cache_hit, status=status, error_code=code, end_user=call.params.user,
        prompt_version=prompt_ref.get("version"), prompt_label=prompt_ref.get("label") or "",
        eval_run=prompt_ref.get("eval_run"))
    logged = generation_log.entry(call, result)
    record = dict(row, generation=logged) if logged is not None else row
    sink = call.record_sink
    if redis_enabled():
        actual = result["prompt_tokens"] + result["completion_tokens"] if result else 0
        delta = call.estimate - actual if call.estimate else 0
        if sink is None:
            usage.ensure_writer()
        try:
            await release(call, delta, "" if sink else usage.record_json(**record))
        except RedisError:  # the record is kept all the same (the slot expires by itself)
            if sink is None:
                await usage.store_now(**record)
    elif sink is None:
        await usage.store_now(**record)
    if result is not None and not completion.cache_hit and call.exact_key is not None \
            and result.get("finish_reason") in ("stop", "length"):
        cached = {k: result[k] for k in ("text", "finish_reason", "prompt_tokens", "completion_tokens",
                                         "served") if k in result}
        await prompt_cache.exact_put(call.exact_key, cached)
        if call.semantic_scope is not None:
            await prompt_cache.semantic_put(scope=call.semantic_scope, result=cached,
                                            question=call.messages[-1]["content"], priority=call.priority)
    m.observe_end(model, latency_s=latency, ttft_s=completion.ttft_s, result=result)
    if sink is not None:  # last: the caller knows the request's bookkeeping is done
        sink(row)
