"""completion_create: the one path from a validated request to a running
completion, shared by /v1/chat/completions and (later) saved-prompt runs.

Order (docs/architecture.md, "The path of a /v1 request"): idempotency key -> prompt cache -> admission
(buckets, capacity, backpressure; nothing is queued when refused) -> submit.
"""

from __future__ import annotations

import dataclasses
import math
import random
import secrets
import time
import uuid
from typing import Any, cast

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from redis.exceptions import RedisError

from accounts.models import ApiKey
from core.errors import ApiError
from core.redis import enabled as redis_enabled
from inference_client import admission, capacity, prompt_cache, routing, usage
from inference_client import metrics as m
from inference_client.completion import Completion, read_events, spawn
from inference_client.idempotency import body_fingerprint, idempotency_release, idempotency_reserve
from inference_client.models import KeyPreference
from inference_client.threads import run_db
from inference_client.validation import ChatParams
from inference_protocol import config, features
from inference_protocol.backend import get_backend
from inference_protocol.catalog import UnknownModel, model_spec, served_name
from inference_protocol.devices import parse_states
from inference_protocol.generation import GenerationRequest


@dataclasses.dataclass(frozen=True)
class SessionCaller:
    """A signed-in browser user on /v1, with their account's tier
    (accounts.keycache.cached_account_tier: no database read per request)."""
    user: AbstractBaseUser
    tier: str


@dataclasses.dataclass(frozen=True)
class Principal:
    user: AbstractBaseUser
    api_key: ApiKey | None
    tier: str
    scope: str      # rate buckets and idempotency keys: per API key (or per user)
    tenant: str     # cache entries: per account

    @classmethod
    def of(cls, caller: ApiKey | SessionCaller) -> Principal:
        if isinstance(caller, ApiKey):
            return cls(caller.user, caller, caller.tier, f"k{caller.pk}", f"u{caller.user_id}")
        user = caller.user  # a browser session: its account's limits, in buckets of its own
        return cls(user, None, caller.tier, f"u{user.pk}", f"u{user.pk}")


def estimate_prompt_tokens(messages: list[dict]) -> int:
    chars = sum(len(msg["content"]) for msg in messages)
    return math.ceil(chars / settings.RATE_LIMIT_CHARS_PER_TOKEN) + \
        settings.RATE_LIMIT_TOKENS_PER_MESSAGE * len(messages)


def _buckets(principal: Principal, model: str, tokens: int, snapshot, lane: str = "interactive"
             ) -> list[admission.Bucket]:
    return [*admission.key_buckets(key_id=principal.scope, tier=principal.tier, tokens=tokens,
                                   snapshot=snapshot, lane=lane),
            admission.global_bucket(model=model, tier=principal.tier, tokens=tokens, lane=lane)]


def _refund(lane: str, tokens: int) -> list[int]:
    """Deltas for (the key's token bucket, the global bucket) giving back ``tokens``
    of a charge (a batch request charged no global tokens)."""
    return [tokens, tokens if lane == "interactive" else 0]


async def _admit(principal: Principal, model: str, request_id: str, tokens: int, *,
                 check_queue: bool, snapshot, devices_of: str | None = None,
                 lane: str = "interactive") -> admission.Decision:
    buckets = _buckets(principal, model, tokens, snapshot, lane)
    key_id = principal.api_key.pk if principal.api_key else None
    decision = await admission.admit(buckets=buckets, model=model, request_id=request_id,
                                     check_queue=check_queue, api_key_id=key_id, devices_of=devices_of)
    if decision.reason == "uninitialised":  # first request ever (or after a flush)
        await sync_to_async(capacity.tick, thread_sensitive=False)()
        decision = await admission.admit(buckets=buckets, model=model, request_id=request_id,
                                         check_queue=check_queue, api_key_id=key_id, devices_of=devices_of)
    elif decision.tick:
        spawn(sync_to_async(capacity.tick, thread_sensitive=False)())
    if not decision.allowed:
        _refuse(principal, decision, tokens)
    return decision


def _refuse(principal: Principal, decision: admission.Decision, tokens: int):
    if decision.reason == "key_revoked":  # revoked since this process cached the key
        m.REJECTED.labels(principal.tier, "key_revoked").inc()
        raise ApiError("This API key has been revoked.", code="revoked_api_key", status_code=401,
                       headers={"WWW-Authenticate": "Bearer"})
    headers = admission.ratelimit_headers(decision)
    if decision.reason == "no_worker":
        m.REJECTED.labels(principal.tier, "no_worker").inc()
        retry_s = settings.INFERENCE_NO_WORKER_RETRY_AFTER_S
        raise ApiError("No worker is serving this model right now; retry shortly.",
                       code="model_unavailable", status_code=503,
                       headers={**headers, "Retry-After": str(retry_s),
                                "retry-after-ms": str(retry_s * 1000)})
    # Refused for its rate: the decision names the bucket.
    reason = "queue_full" if decision.reason == "queue_full" else cast(str, decision.failed_bucket)
    if decision.retry_after_ms < 0 and reason == "tokens":
        limit = decision.buckets["tokens"]["limit"]
        raise ApiError(f"Request too large: it needs about {tokens} tokens (prompt + max_tokens) but "
                       f"your limit is {limit} tokens per minute. Lower max_tokens.",
                       code="request_too_large", status_code=400, field="max_tokens", headers=headers)
    if decision.retry_after_ms < 0:
        # The free share of the global bucket is zero (red zone): the soonest the
        # controller may lift it is after its calm periods.
        reason = "capacity"
        retry_ms = int(1000 * settings.CAPACITY_CONTROLLER_PERIOD_S
                       * (config.current().capacity["calm_periods"] + 1))
    else:
        retry_ms = decision.retry_after_ms
    m.REJECTED.labels(principal.tier, reason).inc()
    what = {"requests": "requests per minute", "tokens": "tokens per minute",
            "global": "the model's current capacity", "capacity": "the model's current capacity",
            "queue_full": "the model's queue length"}[reason]
    raise ApiError(f"Rate limit reached for {what} ({principal.tier} tier). Please try again in "
                   f"{retry_ms / 1000:.1f}s.", code="rate_limit_exceeded", status_code=429,
                   extra={"reason": reason},
                   headers={**headers, "Retry-After": str(max(1, math.ceil(retry_ms / 1000))),
                            "retry-after-ms": str(retry_ms)})


async def _semantic_opted_in(principal: Principal, params: ChatParams) -> bool:
    if params.semantic_cache is not None:
        return params.semantic_cache
    if principal.api_key is None:
        return False
    return await run_db(KeyPreference.objects.filter(api_key=principal.api_key, semantic_cache=True).exists)



async def completion_create(*, api_key_or_user, model: str, messages: list[dict], params: ChatParams,
                            stream: bool = False, idempotency_key: str | None = None,
                            fingerprint: str | None = None, kind: str = "chat",
                            prompt_ref: dict | None = None, lane: str = "interactive",
                            request_id: str | None = None, timeout_s: float | None = None,
                            record_sink=None) -> Completion:
    """Admit and start a completion (or attach to / replay an earlier one).
    Raises ApiError (404 model, 429/503 refusals, 422 idempotency mismatch).

    ``lane`` "batch" (inference_client.batch_lane): priority batch, admitted by the
    batch rules of admission.key_buckets / global_bucket, no in-flight slot (batch
    work never makes interactive requests see a full queue); with a stable
    ``request_id`` of the caller's, its own ``timeout_s``, and ``record_sink``
    (called with the usage record instead of queueing it: the caller stores it
    with its own results)."""
    principal = Principal.of(api_key_or_user)
    snapshot = config.current()  # one config for the whole request (a reference read)
    try:
        spec = model_spec(model, snapshot)
    except UnknownModel as exc:
        raise ApiError(str(exc), code="model_not_found", status_code=404, field="model") from None
    if (kind == "embed") == features.generates(spec):
        what = "generates text; use /v1/chat/completions" if kind == "embed" else \
            "computes embeddings only; use /v1/embeddings"
        raise ApiError(f"The model '{model}' {what}.", code="model_not_supported", status_code=400,
                       field="model")
    missing = features.unsupported(spec, params.features()) if params.features() else None
    if missing:
        raise ApiError(f"The model '{model}' (engine {spec.get('engine')}) does not implement "
                       f"'{missing[0]}'.", code="unsupported_parameter", status_code=400, field=missing[0])
    request_id, created = request_id or uuid.uuid4().hex, int(time.time())
    use_redis = redis_enabled()
    shape: dict[str, Any]
    shape = dict(kind=kind, n=params.n, logprobs=params.logprobs is not None, tools=params.tools,
                 echo=messages[-1]["content"] if params.echo else None)
    prefix = "cmpl" if kind == "text" else "chatcmpl"
    new = dict(id=f"{prefix}-{request_id}", request_id=request_id, model=model, created=created,
               include_usage=params.include_usage, keep_on_disconnect=bool(idempotency_key), **shape)

    if idempotency_key and use_redis:
        fingerprint = fingerprint or body_fingerprint(
            {"model": model, "messages": messages, "stream": stream, **dataclasses.asdict(params)})
        existing = await idempotency_reserve(scope=principal.scope, key=idempotency_key,
                                             fingerprint=fingerprint, request_id=request_id,
                                             created=created)
        if existing is not None:  # a retry: the first request's generation, no new charge
            rid = existing["request_id"]
            completion = Completion(id=f"{prefix}-{rid}", request_id=rid, model=model,
                                    created=existing["created"], attached=True,
                                    include_usage=params.include_usage,
                                    headers={"Idempotent-Replayed": "true"}, **shape)
            return completion.start(read_events(rid, timeout_s=settings.INFERENCE_REQUEST_TIMEOUT_S))
    try:
        return await _start(principal, model, messages, params, new, use_redis, snapshot, prompt_ref,
                            lane=lane, timeout_s=timeout_s or settings.INFERENCE_REQUEST_TIMEOUT_S,
                            record_sink=record_sink, stream=stream)
    except BaseException:
        if idempotency_key and use_redis:
            await idempotency_release(scope=principal.scope, key=idempotency_key, request_id=request_id)
        raise


async def _start(principal, model, messages, params, new: dict, use_redis: bool, snapshot,
                 prompt_ref: dict | None = None, *, lane: str, timeout_s: float, record_sink,
                 stream: bool) -> Completion:
    request_id = new["request_id"]
    cacheable = (use_redis and settings.PROMPT_CACHE_ENABLED and params.temperature == 0
                 and params.cacheable)
    ctx = {"principal": principal, "params": params, "messages": messages, "model": model,
           "snapshot": snapshot, "prompt_ref": prompt_ref or {}, "lane": lane, "record_sink": record_sink}
    hit, kind = None, ""
    if cacheable:
        fp = params.fingerprint()
        # The versions serving now are part of the cache's model: after a rollout
        # step or a rollback, answers of a version no longer served are not replayed.
        serving = sorted(v for v, w in snapshot.versions(model).items() if w > 0)
        cache_model = served_name(model, "+".join(serving)) if serving else model
        ctx["exact_key"] = prompt_cache.exact_key(tenant=principal.tenant, model=cache_model,
                                                  messages=messages, params=fp)
        hit = await prompt_cache.exact_get(ctx["exact_key"])
        kind = "exact" if hit else ""
        if await _semantic_opted_in(principal, params):
            ctx["semantic_scope"] = prompt_cache.semantic_scope(tenant=principal.tenant, model=cache_model,
                                                                messages=messages, params=fp)
            if hit is None:
                found = await prompt_cache.semantic_get(scope=ctx["semantic_scope"], model=model,
                                                        question=messages[-1]["content"])
                hit, kind = (found[0], "semantic") if found else (None, "")
        m.count_cache(kind or "miss")

    if hit is not None:
        decision = await _admit(principal, model, request_id, 0, check_queue=False,
                                snapshot=snapshot, lane=lane) if use_redis else None
        completion = Completion(**new, cache_hit=kind,
                                headers=admission.ratelimit_headers(decision) if decision else {})
        done = {"type": "done", "result": {**hit, "queued_s": 0.0, "latency_s": 0.0}}
        await get_backend().log.astore(request_id, done)
        completion.preload([{"type": "token", "text": hit["text"]}, done] if hit["text"] else [done])
        spawn(_record(completion, ctx, done, estimate=0))
        return completion

    estimate = estimate_prompt_tokens(messages) + params.n * params.max_tokens
    ctx["estimate"] = estimate
    headers, device, served = {}, None, model
    weights = snapshot.versions(model)
    if use_redis:
        # A versioned model: pick the version first, among those ready at this process's
        # last decision, so that the same round trip brings that version's device states.
        guess = choose_version(weights, _last_ready.get(model)) if weights else None
        admit_start = time.perf_counter()
        decision = await _admit(principal, model, request_id, estimate, check_queue=lane == "interactive",
                                snapshot=snapshot, devices_of=served_name(model, guess) if guess else None,
                                lane=lane)
        headers = admission.ratelimit_headers(decision)
        if weights:  # the readiness gate: only versions with a worker that verified and loaded them
            _last_ready[model] = decision.ready
            version = guess if guess in decision.ready else choose_version(weights, decision.ready)
            if version is None:
                await admission.settle(model=model, request_id=request_id,
                                       buckets=_buckets(principal, model, 0, snapshot)[1:],
                                       deltas=_refund(lane, estimate), record="", stream=usage.USAGE_STREAM)
                m.REJECTED.labels(principal.tier, "no_ready_version").inc()
                raise ApiError(f"No worker is ready for any serving version of '{model}' "
                               f"({', '.join(f'{v}: {w}%' for v, w in weights.items())}); retry shortly.",
                               code="model_unavailable", status_code=503,
                               headers={**headers,
                                        "Retry-After": str(settings.INFERENCE_NO_WORKER_RETRY_AFTER_S)})
            ctx["version"], served = version, served_name(model, version)
        if settings.INFERENCE_ROUTING == "soonest" and (not weights or version == guess):
            now = time.time()
            chosen = routing.choose(parse_states(decision.devices, now), now)
            device = chosen.device if chosen else None
    elif weights:
        ctx["version"] = choose_version(weights, None)
        served = served_name(model, ctx["version"])
    generation = GenerationRequest(
        request_id=request_id, model=served, messages=messages, max_tokens=params.max_tokens,
        temperature=params.temperature, top_p=params.top_p, stop=list(params.stop),
        # Always seeded: a redelivered task must replay the same text.
        seed=params.seed if params.seed is not None else secrets.randbits(31),
        response_format=params.response_format or params.tool_constraint, n=params.n, inputs=params.inputs,
        logprobs=params.logprobs,
        raw_prompt=params.raw_prompt,
        priority="batch" if lane == "batch" else "paid" if principal.tier == "paid" else "free",
        timeout_s=timeout_s, stream=stream)
    timings = {"admit": (time.perf_counter() - admit_start) * 1000} if use_redis else {}
    publish_start = time.perf_counter()
    try:
        await get_backend().asubmit(generation, device=device)
    except Exception as exc:
        if use_redis:  # nothing ran: refund the charge, free the slot, no usage record
            await admission.settle(model=model, request_id=request_id,
                                   buckets=_buckets(principal, model, 0, snapshot)[1:],
                                   deltas=_refund(lane, estimate),
                                   record="", stream=usage.USAGE_STREAM)
        raise ApiError(f"The task queue is unavailable ({type(exc).__name__}: {exc}); try again shortly.",
                       code="queue_unavailable", status_code=503, headers={"Retry-After": "5"}) from exc
    timings["publish"] = (time.perf_counter() - publish_start) * 1000
    completion = Completion(**new, headers=headers, timings=timings)
    return completion.start(read_events(request_id, timeout_s=timeout_s + 5),
                            on_end=lambda c, terminal: _record(c, ctx, terminal, estimate=estimate))


# model -> the versions ready at this process's last admission of it (the readiness
# gate itself is each decision's own set; this only picks whose device states to fetch).
_last_ready: dict[str, frozenset] = {}


def choose_version(weights: dict[str, int], ready: frozenset | None) -> str | None:
    """A version by the document's weights among the ready ones (``ready`` None:
    all count as ready). When no weighted version is ready, none: traffic never
    shifts onto a version that nothing serves."""
    candidates = [(v, w) for v, w in weights.items() if w > 0 and (ready is None or v in ready)]
    if not candidates:
        return None
    pick = random.random() * sum(w for _, w in candidates)
    for version, weight in candidates:
        pick -= weight
        if pick < 0:
            return version
    return candidates[-1][0]


async def _record(completion: Completion, ctx: dict, terminal: dict, *, estimate: int) -> None:
    """The end of a request: its usage record, its exact token charge (a
    failed generation is refunded in full), its slot, the cache and metrics."""
    principal, model = ctx["principal"], ctx["model"]
    result = terminal.get("result") if terminal["type"] == "done" else None
    latency = time.monotonic() - completion.started
    code = terminal.get("code", "")
    status = "ok" if result else ("cancelled" if code == "cancelled" else "error")
    record = dict(
        user_id=principal.user.pk, api_key_id=principal.api_key.pk if principal.api_key else None,
        request_id=completion.request_id, model=model, version=ctx.get("version", ""), tier=principal.tier,
        prompt_tokens=result["prompt_tokens"] if result else 0,
        completion_tokens=result["completion_tokens"] if result else 0,
        latency_ms=int(latency * 1000),
        ttft_ms=int(completion.ttft_s * 1000) if completion.ttft_s is not None else None,
        cache_hit=completion.cache_hit, status=status, error_code=code, end_user=ctx["params"].user,
        prompt_version=ctx["prompt_ref"].get("version"), prompt_label=ctx["prompt_ref"].get("label") or "",
        eval_run=ctx["prompt_ref"].get("eval_run"))
    sink = ctx["record_sink"]
    if redis_enabled():
        actual = result["prompt_tokens"] + result["completion_tokens"] if result else 0
        delta = estimate - actual if estimate else 0
        if sink is None:
            usage.ensure_writer()
        try:
            await admission.settle(model=model, request_id=completion.request_id,
                                   buckets=_buckets(principal, model, 0, ctx["snapshot"])[1:],
                                   deltas=_refund(ctx["lane"], delta),
                                   record="" if sink else usage.record_json(**record),
                                   stream=usage.USAGE_STREAM)
        except RedisError:  # the record is kept all the same (the slot expires by itself)
            if sink is None:
                await usage.store_now(**record)
    elif sink is None:
        await usage.store_now(**record)
    if result is not None and not completion.cache_hit and "exact_key" in ctx \
            and result.get("finish_reason") in ("stop", "length"):
        cached = {k: result[k] for k in ("text", "finish_reason", "prompt_tokens", "completion_tokens",
                                         "served") if k in result}
        await prompt_cache.exact_put(ctx["exact_key"], cached)
        if "semantic_scope" in ctx:
            await prompt_cache.semantic_put(scope=ctx["semantic_scope"], result=cached,
                                            question=ctx["messages"][-1]["content"])
    m.observe_end(model, latency_s=latency, ttft_s=completion.ttft_s, result=result)
    if sink is not None:  # last: the caller knows the request's bookkeeping is done
        sink(record)
