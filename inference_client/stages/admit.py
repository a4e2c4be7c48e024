"""The admit stage: the caller's and the model's buckets, capacity and backpressure
(one Lua script in Redis; nothing is queued when refused), then the version the
generation goes to."""

from __future__ import annotations

import math
import random
from typing import cast

from asgiref.sync import sync_to_async
from django.conf import settings

from core.error_codes import DomainError
from inference_client import admission, capacity, usage
from inference_client import metrics as m
from inference_client.completion import spawn
from inference_client.stages.call import Call, Principal
from inference_protocol import config
from inference_protocol.catalog import served_name


def estimate_prompt_tokens(messages: list[dict]) -> int:
    chars = sum(len(msg["content"]) for msg in messages)
    return math.ceil(chars / settings.RATE_LIMIT_CHARS_PER_TOKEN) + \
        settings.RATE_LIMIT_TOKENS_PER_MESSAGE * len(messages)


def buckets_of(principal: Principal, model: str, tokens: int, snapshot, lane: str = "interactive"
               ) -> list[admission.Bucket]:
    return [*admission.key_buckets(key_id=principal.scope, tier=principal.tier, tokens=tokens,
                                   snapshot=snapshot, lane=lane),
            admission.global_bucket(model=model, tier=principal.tier, tokens=tokens, lane=lane)]


def refund(lane: str, tokens: int) -> list[int]:
    """Deltas for (the key's token bucket, the global bucket) giving back ``tokens``
    of a charge (a batch request charged no global tokens)."""
    return [tokens, tokens if lane == "interactive" else 0]


async def release(call: Call, tokens: int, record: str = "") -> None:
    """Free the call's slot and give back ``tokens`` of its charge (with its usage record, if any)."""
    await admission.settle(model=call.model, request_id=call.request_id,
                           buckets=buckets_of(call.principal, call.model, 0, call.snapshot)[1:],
                           deltas=refund(call.lane, tokens), record=record, stream=usage.USAGE_STREAM)


async def admit(call: Call) -> None:
    """A cached answer is charged one request and no tokens. Otherwise the
    estimate is charged, and a versioned model gets a version with a ready worker."""
    model = call.model
    if call.hit is not None:
        if call.use_redis:
            call.decision = await admit_tokens(call.principal, model, call.request_id, 0, check_queue=False,
                                               snapshot=call.snapshot, lane=call.lane)
            call.headers = admission.ratelimit_headers(call.decision)
        return
    params = call.params
    call.estimate = estimate_prompt_tokens(call.messages) + params.n * params.max_tokens
    call.served = model
    weights = call.snapshot.versions(model)
    if not call.use_redis:
        if weights:
            call.version = choose_version(weights, None) or ""
            call.served = served_name(model, call.version)
        return
    decision = await admit_tokens(call.principal, model, call.request_id, call.estimate,
                                  check_queue=call.lane == "interactive", snapshot=call.snapshot,
                                  lane=call.lane)
    call.decision, call.headers = decision, admission.ratelimit_headers(decision)
    if weights:  # the readiness gate: only versions with a worker that verified and loaded them
        version = choose_version(weights, decision.ready)
        if version is None:
            await release(call, call.estimate)
            m.REJECTED.labels(call.principal.tier, "no_ready_version").inc()
            raise DomainError(f"No worker is ready for any serving version of '{model}' "
                              f"({', '.join(f'{v}: {w}%' for v, w in weights.items())}); retry shortly.",
                              code="model_unavailable",
                              headers={**call.headers,
                                       "Retry-After": str(settings.INFERENCE_NO_WORKER_RETRY_AFTER_S)})
        call.version, call.served = version, served_name(model, version)


async def admit_tokens(principal: Principal, model: str, request_id: str, tokens: int, *,
                       check_queue: bool, snapshot, lane: str = "interactive") -> admission.Decision:
    """One admission decision; DomainError (401, 400, 429, 503) when refused."""
    buckets = buckets_of(principal, model, tokens, snapshot, lane)
    key_id = principal.api_key.pk if principal.api_key else None
    decision = await admission.admit(buckets=buckets, model=model, request_id=request_id,
                                     check_queue=check_queue, api_key_id=key_id)
    if decision.reason == "uninitialised":  # first request ever (or after a flush)
        await sync_to_async(capacity.tick, thread_sensitive=False)()
        decision = await admission.admit(buckets=buckets, model=model, request_id=request_id,
                                         check_queue=check_queue, api_key_id=key_id)
    elif decision.tick:
        spawn(sync_to_async(capacity.tick, thread_sensitive=False)())
    if not decision.allowed:
        _refuse(principal, decision, tokens)
    return decision


def _refuse(principal: Principal, decision: admission.Decision, tokens: int):
    if decision.reason == "key_revoked":  # revoked since this process cached the key
        m.REJECTED.labels(principal.tier, "key_revoked").inc()
        raise DomainError("This API key has been revoked.", code="revoked_api_key",
                          headers={"WWW-Authenticate": "Bearer"})
    headers = admission.ratelimit_headers(decision)
    if decision.reason == "no_worker":
        m.REJECTED.labels(principal.tier, "no_worker").inc()
        retry_s = settings.INFERENCE_NO_WORKER_RETRY_AFTER_S
        raise DomainError("No worker is serving this model right now; retry shortly.",
                          code="model_unavailable",
                          headers={**headers, "Retry-After": str(retry_s),
                                   "retry-after-ms": str(retry_s * 1000)})
    reason = "queue_full" if decision.reason == "queue_full" else cast(str, decision.failed_bucket)
    if decision.retry_after_ms < 0 and reason == "tokens":
        limit = decision.buckets["tokens"]["limit"]
        raise DomainError(f"Request too large: it needs about {tokens} tokens (prompt + max_tokens) but "
                          f"your limit is {limit} tokens per minute. Lower max_tokens.",
                          code="too_many_tokens", field="max_tokens", headers=headers)
    if decision.retry_after_ms < 0:
        # The free share of the global bucket is zero (red zone): the soonest the
        # controller may lift it is after its calm periods.
        reason = "capacity"
        retry_ms = int(1000 * settings.CAPACITY_CONTROLLER_PERIOD_S
                       * (config.current().capacity["calm_periods"] + 1))
    else:
        retry_ms = decision.retry_after_ms
    m.REJECTED.labels(principal.tier, reason).inc()
    raise rate_limited(reason, principal.tier, retry_ms, headers)


_LIMITED = {"requests": "requests per minute", "tokens": "tokens per minute",
            "global": "the model's current capacity", "capacity": "the model's current capacity",
            "queue_full": "the model's queue length"}


def rate_limited(reason: str, tier: str, retry_ms: int, headers: dict[str, str]) -> DomainError:
    """The 429 for a limit ``reason`` of ``tier``, retryable in ``retry_ms``, with
    the buckets' ``headers`` (admission.ratelimit_headers)."""
    return DomainError(f"Rate limit reached for {_LIMITED[reason]} ({tier} tier). Please try again in "
                       f"{retry_ms / 1000:.1f}s.", code="rate_limit_exceeded", extra={"reason": reason},
                       headers={**headers, "Retry-After": str(max(1, math.ceil(retry_ms / 1000))),
                                "retry-after-ms": str(retry_ms)})


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
