"""Run one generation request on this process's scheduler, writing its events.

The same function serves a Celery task (GPU worker) and the in-process worker
thread (embedded default). It is idempotent per request id: a redelivered
request whose result is already stored returns that result without running.
"""

from __future__ import annotations

import logging
import threading
import weakref
from concurrent.futures import Future
from typing import Any, Protocol

from core.vocabulary import Priority
from inference_protocol.events import EventLog
from inference_protocol.generation import GenerationRequest
from inference_protocol.validation import SEED_MAX
from inference_worker.engines.base import EngineError, SamplingParams, Sequence
from inference_worker.runtime import get_scheduler, submit_together

logger = logging.getLogger(__name__)


def sampling_params(request: GenerationRequest, index: int = 0) -> SamplingParams:
    seed = request.seed
    if seed is not None and index:  # each of n choices draws its own way, reproducibly
        seed = (seed + index) % (SEED_MAX + 1)
    return SamplingParams(max_tokens=request.max_tokens, temperature=request.temperature,
                          top_p=request.top_p, stop=tuple(request.stop), seed=seed,
                          constraint=request.response_format, logprobs=request.logprobs,
                          raw_prompt=request.raw_prompt)


class _Group:
    """The handles of one request's n choices: cancelled together, waited together."""

    def __init__(self):
        self.handles = []

    def cancel(self, reason: str) -> None:
        for handle in self.handles:
            handle.cancel(reason)

    def result(self, timeout: float):
        return [handle.result(timeout=timeout) for handle in self.handles]


# Cancel notices arrive through the log's watcher within milliseconds; the
# mark is also polled this often (seconds), for a notice that was lost.
CANCEL_POLL_S = 1.0

# Requests running in this process, for cancel notices (request id -> handle).
class _Cancellable(Protocol):
    def cancel(self, reason: str) -> None: ...


_handles: dict[str, _Cancellable] = {}
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
    """The handle's results; a cancel mark found meanwhile (a notice lost) cancels it."""
    if cancelled:  # went away before the request reached this worker
        handle.cancel("client went away")
    while True:
        try:
            return handle.result(timeout=CANCEL_POLL_S)
        except TimeoutError:
            if log.cancelled(request_id):
                handle.cancel("client went away")


def _usage(seq: Sequence, result) -> tuple[int, int]:
    """(prompt, completion) tokens: the engine's own count, or, from an engine
    whose tokenizer is remote (upstream), what the model server reported."""
    reported = seq.meta.get("usage") or {}
    prompt, completion = reported.get("prompt_tokens"), reported.get("completion_tokens")
    if isinstance(prompt, int) and isinstance(completion, int):
        return prompt, completion
    return result.prompt_tokens, result.completion_tokens


def run_generation(request: GenerationRequest, log: EventLog, *, attempt: int = 1) -> dict[str, Any] | None:
    """Generate, streaming token events to ``log``; returns the terminal event.

    ``request.n`` choices run as n sequences submitted together (they join the
    same steps); their token events carry ``index`` and an offset each, and the
    done event lists them under ``choices``."""
    return run_generations([request], log, attempt=attempt)[0]


def run_generations(requests: list[GenerationRequest], log: EventLog, *,
                    attempt: int = 1) -> list[dict[str, Any] | None]:
    """``run_generation`` for several requests on one thread (a broker message
    that carries several): all are submitted before any is waited on, so they
    join the same steps, and their first look at the log is one round trip."""
    runs = [_Generation(request, log, attempt) for request in requests]
    # A redelivered message, or a batch line (a resumed batch resubmits the lines it
    # had in flight), may have finished already: look before generating (one
    # result, not two). An interactive first delivery has a fresh id, so it
    # starts at once and looks while the engine runs: a Redis round trip off the
    # request's path; a result or a cancel mark found then stops it within a step.
    first = [run for run in runs if run.look_first]
    for run, state in zip(first, log.states([run.request.request_id for run in first]), strict=True):
        run.found(state)
    _watch(log)
    for run in runs:
        run.submit()
    later = [run for run in runs if run.event is None and not run.look_first]
    try:
        states = log.states([run.request.request_id for run in later])
    except Exception as exc:  # Redis away: each ends with an error event (if that can be written)
        for run in later:
            run.failure = run.failure or exc
    else:
        for run, state in zip(later, states, strict=True):
            run.found(state)
    return [run.finish() for run in runs]


class _Generation:
    """One request: found finished (``found``), else submitted, then waited on
    and its terminal event written (``finish``)."""

    def __init__(self, request: GenerationRequest, log: EventLog, attempt: int):
        self.request, self.log, self.attempt = request, log, attempt
        self.look_first = attempt > 1 or request.priority == Priority.BATCH.wire
        self.event: dict[str, Any] | None = None   # the terminal event, once known
        self.cancelled = False
        self.group = _Group()
        self.seqs: list[Sequence] = []
        self.finishing: list[tuple[dict[str, Any], Future[Any]]] = []
        self.failure: Exception | None = None

    def found(self, state: tuple[dict[str, Any] | None, bool]) -> None:
        finished, self.cancelled = state
        if finished is not None:
            if self.group.handles:
                self.group.cancel("it has a result already")
            self.event = finished

    def submit(self) -> None:
        if self.event is not None:
            return
        request, log = self.request, self.log
        inputs = request.inputs
        n = len(inputs) if inputs else max(1, request.n)
        offsets = [0] * n

        def on_token_for(index: int, seq: Sequence):
            if not request.stream:
                return None  # the done event carries the text
            sent = 0

            def on_token(delta: str) -> None:
                nonlocal sent
                event = {"type": "token", "attempt": self.attempt, "offset": offsets[index], "text": delta}
                if n > 1:
                    event["index"] = index
                logprobs = seq.meta.get("logprobs")
                if logprobs is not None:
                    event["logprobs"], sent = logprobs[sent:], len(logprobs)
                log.append(request.request_id, event)
                offsets[index] += len(delta)
            return on_token

        def on_done(result) -> None:
            # n = 1, on the scheduler thread as the result comes: the terminal write is
            # queued before this task's thread wakes (a thread hand-off off the path).
            event = _done_event(request, self.seqs, [result], self.scheduler.name)
            self.finishing.append((event, log.finish_async(request.request_id, event)))

        try:
            self.scheduler = get_scheduler(request.model)
            embeds = "embeddings" in self.scheduler.engine.features
            if embeds != bool(inputs):
                raise EngineError(f"model {request.model} " + ("computes embeddings only" if embeds else
                                  "does not compute embeddings"), code="unsupported_parameter")
            for index in range(n):
                messages = [{"role": "user", "content": inputs[index]}] if inputs else request.messages
                seq_id = request.request_id if n == 1 else f"{request.request_id}/{index}"
                params = sampling_params(request, index)
                self.seqs.append(Sequence(id=seq_id, messages=messages, params=params))
            # Together: the n choices join one step, where the engine can share their prompt's prefill.
            items = [(seq, on_token_for(index, seq)) for index, seq in enumerate(self.seqs)]
            self.group.handles = submit_together(request.model, items, request.priority,
                                                 timeout=request.timeout_s,
                                                 on_done=on_done if n == 1 else None)
            # Cancel notices reach it from now on, while this thread waits on others of its message.
            with _handles_lock:
                _handles[request.request_id] = self.group
        except Exception as exc:
            self.failure = exc

    def finish(self) -> dict[str, Any] | None:
        """Wait for the result and write the terminal event; returns it."""
        try:
            return self._finish()
        finally:
            with _handles_lock:
                if _handles.get(self.request.request_id) is self.group:
                    _handles.pop(self.request.request_id)

    def _finish(self) -> dict[str, Any] | None:
        if self.event is not None:
            return self.event  # found finished
        request, log = self.request, self.log
        try:
            if self.failure is not None:
                raise self.failure
            results = _wait(self.group, log, request.request_id, self.cancelled)
        except Exception as exc:  # whatever failed, the client gets a terminal event, not a timeout
            self.group.cancel("the request failed")
            code, message = getattr(exc, "code", None), str(exc)
            if code == "duplicate_request" and not self.group.handles:
                # The same request is already running here (a redelivered task and a
                # resubmission of it, e.g. a resumed batch): that attempt writes the result.
                logger.info("request %s is already running here; leaving it to that attempt",
                            request.request_id)
                return {"type": "duplicate", "request_id": request.request_id}
            if not isinstance(code, str):  # not a request-level error: a bug or an engine crash
                logger.exception("request %s failed unexpectedly", request.request_id)
                code, message = "engine_error", f"{type(exc).__name__}: {exc}"
            event = {"type": "error", "code": code, "message": message,
                     "retry_after": getattr(exc, "retry_after", None)}
            if code == "cancelled":  # what the engine spent on it, and on it after the cancel
                event["completion_tokens"] = sum(h.completion_tokens for h in self.group.handles)
                event["tokens_after_cancel"] = sum(h.tokens_after_cancel for h in self.group.handles)
            written = log.finish_async(request.request_id, event)
        else:
            # n = 1: the scheduler thread built the done event and queued its write
            # as the result came (on_done), before this thread woke.
            if self.finishing:
                event, written = self.finishing[0]
            else:
                event = _done_event(request, self.seqs, results, self.scheduler.name)
                written = log.finish_async(request.request_id, event)
        if not written.result():
            logger.info("request %s finished twice; keeping the first result", request.request_id)
            return log.final(request.request_id)
        return event


def _done_event(request: GenerationRequest, seqs: list[Sequence], results: list,
                served: str) -> dict[str, Any]:
    """The terminal event of a generation whose n sequences finished."""
    inputs = request.inputs
    n = len(seqs)
    choices, completion_tokens, input_tokens = [], 0, 0
    for index, (seq, result) in enumerate(zip(seqs, results, strict=True)):
        prompt_tokens, used = _usage(seq, result)
        completion_tokens += used
        input_tokens += prompt_tokens
        choice = {"index": index, "text": result.text, "finish_reason": result.finish_reason}
        if request.logprobs is not None:
            choice["logprobs"] = seq.meta.get("logprobs", [])
        if inputs:
            choice["embedding"] = seq.meta.get("embedding")
        choices.append(choice)
    first = results[0]
    event: dict[str, Any] = {"type": "done", "result": {
        "text": first.text, "finish_reason": first.finish_reason,
        # n choices share one prompt; embeddings' inputs are each a prompt.
        "prompt_tokens": input_tokens if inputs else prompt_tokens,
        "completion_tokens": completion_tokens,
        "queued_s": first.queued_s, "latency_s": max(r.latency_s for r in results),
        "first_token_s": min((r.first_token_s for r in results if r.first_token_s is not None),
                             default=None),
        # What served it: the name this worker's scheduler was loaded and declared
        # ready under (model, or model@version), as its heartbeats say.
        "served": served}}
    if n > 1 or inputs:
        event["result"]["choices"] = choices
    if request.logprobs is not None:
        event["result"]["logprobs"] = choices[0]["logprobs"]
    return event
