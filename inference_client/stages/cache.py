"""The cache stage: an earlier answer, a retry's (Idempotency-Key) or the prompt cache's."""

from __future__ import annotations

import dataclasses

from django.conf import settings

from inference_client import metrics as m
from inference_client import prompt_cache
from inference_client.completion import Completion, read_events, spawn
from inference_client.idempotency import body_fingerprint, idempotency_reserve
from inference_client.stages.call import Call
from inference_client.stages.record import record
from inference_protocol.backend import get_backend
from inference_protocol.catalog import served_name


async def replay(call: Call) -> Completion | None:
    """Reserve the call's Idempotency-Key; a retry attaches to the first request's
    generation instead (no new charge). 422 when the key came with another body."""
    if not (call.idempotency_key and call.use_redis):
        return None
    params = call.params
    fingerprint = call.fingerprint or body_fingerprint(
        {"model": call.model, "messages": call.messages, "stream": call.stream, **dataclasses.asdict(params)})
    existing = await idempotency_reserve(scope=call.principal.scope, key=call.idempotency_key,
                                         fingerprint=fingerprint, request_id=call.request_id,
                                         created=call.created)
    if existing is None:
        return None
    rid = existing["request_id"]
    completion = Completion(id=call.answer_id(rid), request_id=rid, model=call.model,
                            created=existing["created"], attached=True, include_usage=params.include_usage,
                            headers={"Idempotent-Replayed": "true"}, **call.shape())
    return completion.start(read_events(rid, timeout_s=settings.INFERENCE_REQUEST_TIMEOUT_S, attached=True))


async def lookup(call: Call) -> None:
    """A deterministic call's (temperature 0) cached answer, exact or, where the
    caller opted in, semantic; the cache keys, for the record stage to fill."""
    params = call.params
    if not (call.use_redis and settings.PROMPT_CACHE_ENABLED and params.temperature == 0
            and params.cacheable):
        return
    principal, model, messages = call.principal, call.model, call.messages
    fp = params.fingerprint()
    # The versions serving now are part of the cache's model: after a rollout
    # step or a rollback, answers of a version no longer served are not replayed.
    serving = sorted(v for v, w in call.snapshot.versions(model).items() if w > 0)
    cache_model = served_name(model, "+".join(serving)) if serving else model
    call.exact_key = prompt_cache.exact_key(tenant=principal.tenant, model=cache_model,
                                            messages=messages, params=fp)
    call.hit = await prompt_cache.exact_get(call.exact_key)
    call.cache_hit = "exact" if call.hit else ""
    if params.semantic_cache:
        call.semantic_scope = prompt_cache.semantic_scope(tenant=principal.tenant, model=cache_model,
                                                          messages=messages, params=fp)
        if call.hit is None:
            found = await prompt_cache.semantic_get(scope=call.semantic_scope, model=model,
                                                    question=messages[-1]["content"], priority=call.priority)
            call.hit, call.cache_hit = (found[0], "semantic") if found else (None, "")
    m.count_cache(call.cache_hit or "miss")


async def answer(call: Call) -> Completion:
    """The cached result as the call's answer (in place of publish and stream),
    stored in its event log like a worker's; then the record stage."""
    hit = call.hit
    assert hit is not None  # answer() runs only on a hit
    completion = call.completion(cache_hit=call.cache_hit, headers=call.headers, timings=call.timings)
    done = {"type": "done", "result": {**hit, "queued_s": 0.0, "latency_s": 0.0}}
    await get_backend().log.astore(call.request_id, done)
    completion.preload([{"type": "token", "text": hit["text"]}, done] if hit["text"] else [done])
    spawn(record(completion, call, done))
    return completion
