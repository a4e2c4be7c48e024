"""Run one generation request on this process's scheduler, writing its events.

The same function serves a Celery task (GPU worker) and the in-process worker
thread (embedded default). It is idempotent per request id: a redelivered
request whose result is already stored returns that result without running.
"""

from __future__ import annotations

import dataclasses
import logging

from inference_worker.engines.base import EngineError, SamplingParams, Sequence
from inference_worker.events import EventLog
from inference_worker.runtime import get_scheduler

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class GenerationRequest:
    """What the gateway sends to a worker (JSON-serialisable)."""

    request_id: str
    model: str
    messages: list[dict]
    max_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    stop: list[str] = dataclasses.field(default_factory=list)
    seed: int | None = None
    priority: str = "free"
    timeout_s: float | None = None     # the client's patience, measured from queueing

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def sampling(self) -> SamplingParams:
        return SamplingParams(max_tokens=self.max_tokens, temperature=self.temperature,
                              top_p=self.top_p, stop=tuple(self.stop), seed=self.seed)


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
        seq = Sequence(id=request.request_id, messages=request.messages, params=request.sampling())
        handle = scheduler.submit(seq, request.priority, timeout=request.timeout_s, on_token=on_token)
        result = _wait(handle, log, request.request_id)
    except EngineError as exc:
        event = {"type": "error", "code": exc.code, "message": str(exc),
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
