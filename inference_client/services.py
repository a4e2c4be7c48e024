"""completion_create: the one path from a validated request to a running
completion, shared by /v1/chat/completions, /v1/completions, /v1/embeddings,
saved-prompt runs and the batch lane: the stages of inference_client.stages
from resolve on (docs/architecture.md, "The path of a /v1 request")."""

from __future__ import annotations

import time
import uuid

from django.conf import settings

from accounts.models import ApiKey
from core.redis import enabled as redis_enabled
from inference_client.completion import Completion
from inference_client.idempotency import idempotency_release
from inference_client.request_params import ChatParams
from inference_client.stages.admit import admit
from inference_client.stages.cache import answer, lookup, replay
from inference_client.stages.call import Call, Principal, SessionCaller
from inference_client.stages.publish import publish
from inference_client.stages.publish import stream as stream_stage
from inference_client.stages.resolve import resolve
from inference_protocol import config


async def completion_create(*, api_key_or_user: ApiKey | SessionCaller, model: str, messages: list[dict],
                            params: ChatParams, stream: bool = False, idempotency_key: str | None = None,
                            fingerprint: str | None = None, kind: str = "chat",
                            prompt_ref: dict | None = None, lane: str = "interactive",
                            request_id: str | None = None, timeout_s: float | None = None,
                            record_sink=None) -> Completion:
    """Admit and start a completion (or attach to / replay an earlier one).
    Raises DomainError (404 model, 429/503 refusals, 422 idempotency mismatch).

    ``lane`` "batch" (inference_client.batch_lane): priority batch, admitted by the
    batch rules of admission.key_buckets / global_bucket, no in-flight slot (batch
    work never makes interactive requests see a full queue); with a stable
    ``request_id`` of the caller's, its own ``timeout_s``, and ``record_sink``
    (called with the usage record instead of queueing it: the caller stores it
    with its own results)."""
    mark = time.perf_counter()
    call = Call(principal=Principal.of(api_key_or_user), model=model, messages=messages, params=params,
                snapshot=config.current(), use_redis=redis_enabled(), kind=kind, stream=stream, lane=lane,
                request_id=request_id or uuid.uuid4().hex, created=int(time.time()),
                timeout_s=timeout_s or settings.INFERENCE_REQUEST_TIMEOUT_S,
                idempotency_key=idempotency_key, fingerprint=fingerprint, prompt_ref=prompt_ref or {},
                record_sink=record_sink)
    resolve(call)
    mark = call.lap("resolve", mark)
    replayed = await replay(call)
    if replayed is not None:
        return replayed
    try:
        await lookup(call)
        mark = call.lap("cache", mark)
        await admit(call)
        mark = call.lap("admit", mark)
        if call.hit is not None:
            return await answer(call)
        await publish(call)
        call.lap("publish", mark)
        return stream_stage(call)
    except BaseException:
        if idempotency_key and call.use_redis:
            await idempotency_release(scope=call.principal.scope, key=idempotency_key,
                                      request_id=call.request_id)
        raise
