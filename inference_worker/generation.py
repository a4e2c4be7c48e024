"""Run one generation request on this process's scheduler, writing its events.

The same function serves a Celery task (GPU worker) and the in-process worker
thread (embedded default). It is idempotent per request id: a redelivered
request whose result is already stored returns that result without running.
"""

from __future__ import annotations

import logging

from inference_protocol.events import EventLog
from inference_protocol.generation import GenerationRequest
from inference_worker.engines.base import SamplingParams, Sequence
from inference_worker.runtime import get_scheduler

logger = logging.getLogger(__name__)


def sampling_params(request: GenerationRequest) -> SamplingParams:
    return SamplingParams(max_tokens=request.max_tokens, temperature=request.temperature,
                          top_p=request.top_p, stop=tuple(request.stop), seed=request.seed)


# How often a waiting worker checks whether the client went away (seconds).
CANCEL_POLL_S = 0.25


def _wait(handle, log: EventLog, request_id: str):
    while True:
        try:
            return handle.result(timeout=CANCEL_POLL_S)
        except TimeoutError:
            if log.cancelled(request_id):
                handle.cancel("client went away")


def run_generation(request: GenerationRequest, log: EventLog, *, attempt: int = 1) -> dict:
    """Generate, streaming token events to ``log``; returns the terminal event."""
    finished = log.final(request.request_id)
    if finished is not None:
        return finished  # redelivered after it completed: one result, not two

    offset = 0

    def on_token(delta: str) -> None:
        nonlocal offset
        log.append(request.request_id, {"type": "token", "attempt": attempt, "offset": offset,
                                        "text": delta})
        offset += len(delta)

    try:
        scheduler = get_scheduler(request.model)
        seq = Sequence(id=request.request_id, messages=request.messages, params=sampling_params(request))
        handle = scheduler.submit(seq, request.priority, timeout=request.timeout_s, on_token=on_token)
        result = _wait(handle, log, request.request_id)
    except Exception as exc:  # whatever failed, the client gets a terminal event, not a timeout
        code, message = getattr(exc, "code", None), str(exc)
        if not isinstance(code, str):  # not a request-level error: a bug or an engine crash
            logger.exception("request %s failed unexpectedly", request.request_id)
            code, message = "engine_error", f"{type(exc).__name__}: {exc}"
        event = {"type": "error", "code": code, "message": message,
                 "retry_after": getattr(exc, "retry_after", None)}
    else:
        event = {"type": "done", "result": {
            "text": result.text, "finish_reason": result.finish_reason,
            "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
            "queued_s": result.queued_s, "latency_s": result.latency_s}}
    if not log.finish(request.request_id, event):
        logger.info("request %s finished twice; keeping the first result", request.request_id)
        return log.final(request.request_id)
    return event
