"""Run one generation request on this process's scheduler, writing its events.

The same function serves a Celery task (GPU worker) and the in-process worker
thread (embedded default). It is idempotent per request id: a redelivered
request whose result is already stored returns that result without running.
"""

from __future__ import annotations

import logging
import threading
import weakref

from inference_protocol.events import EventLog
from inference_protocol.generation import GenerationRequest
from inference_worker.engines.base import SamplingParams, Sequence
from inference_worker.heartbeat import WORKER_ID
from inference_worker.runtime import get_scheduler

logger = logging.getLogger(__name__)


def sampling_params(request: GenerationRequest) -> SamplingParams:
    return SamplingParams(max_tokens=request.max_tokens, temperature=request.temperature,
                          top_p=request.top_p, stop=tuple(request.stop), seed=request.seed,
                          constraint=request.response_format)


# Cancel notices arrive through the log's watcher within milliseconds; the
# mark is also polled this often (seconds), for a notice that was lost.
CANCEL_POLL_S = 1.0

# Requests running in this process, for cancel notices (request id -> handle).
_handles: dict[str, object] = {}
_handles_lock = threading.Lock()
_watched: weakref.WeakSet = weakref.WeakSet()  # the logs whose cancel notices we watch


def _watch(log: EventLog) -> None:
    with _handles_lock:
        if log in _watched:
            return
        _watched.add(log)
    log.watch_cancels(_cancel_local)


def _cancel_local(request_id: str) -> None:
    with _handles_lock:
        handle = _handles.get(request_id)
    if handle is not None:
        handle.cancel("client went away")


def _wait(handle, log: EventLog, request_id: str, cancelled: bool):
    with _handles_lock:
        _handles[request_id] = handle
    try:
        if cancelled:  # went away before the request reached this worker
            handle.cancel("client went away")
        while True:
            try:
                return handle.result(timeout=CANCEL_POLL_S)
            except TimeoutError:
                if log.cancelled(request_id):
                    handle.cancel("client went away")
    finally:
        with _handles_lock:
            _handles.pop(request_id, None)


def _usage(seq: Sequence, result) -> tuple[int, int]:
    """(prompt, completion) tokens: the engine's own count, or, from an engine
    whose tokenizer is remote (upstream), what the model server reported."""
    reported = seq.meta.get("usage") or {}
    prompt, completion = reported.get("prompt_tokens"), reported.get("completion_tokens")
    if isinstance(prompt, int) and isinstance(completion, int):
        return prompt, completion
    return result.prompt_tokens, result.completion_tokens


def run_generation(request: GenerationRequest, log: EventLog, *, attempt: int = 1) -> dict:
    """Generate, streaming token events to ``log``; returns the terminal event."""
    finished, cancelled = log.state(request.request_id)
    if finished is not None:
        return finished  # redelivered after it completed: one result, not two
    _watch(log)

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
        result = _wait(handle, log, request.request_id, cancelled)
    except Exception as exc:  # whatever failed, the client gets a terminal event, not a timeout
        code, message = getattr(exc, "code", None), str(exc)
        if not isinstance(code, str):  # not a request-level error: a bug or an engine crash
            logger.exception("request %s failed unexpectedly", request.request_id)
            code, message = "engine_error", f"{type(exc).__name__}: {exc}"
        event = {"type": "error", "code": code, "message": message,
                 "retry_after": getattr(exc, "retry_after", None)}
    else:
        prompt_tokens, completion_tokens = _usage(seq, result)
        event = {"type": "done", "result": {
            "text": result.text, "finish_reason": result.finish_reason,
            "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "queued_s": result.queued_s, "latency_s": result.latency_s, "device": WORKER_ID}}
    if not log.finish(request.request_id, event):
        logger.info("request %s finished twice; keeping the first result", request.request_id)
        return log.final(request.request_id)
    return event
