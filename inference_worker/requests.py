"""What a caller holds for one request: its handle, result and failure types,
plus the scheduler's configuration and stats records."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
from collections.abc import Callable
from typing import Any

from core.vocabulary import Priority
from inference_worker.engines.base import EngineError, Sequence, StepResult

# Logged as the scheduler's: its thread runs these callbacks and releases.
log = logging.getLogger("inference_worker.scheduler")

TokenCallback = Callable[[str], None]
DoneCallback = Callable[["GenerationResult"], None]
ErrorCallback = Callable[[str, str], None]


class RequestFailed(EngineError):
    """A request did not complete; ``code`` says why (stable, machine-readable):

    ``deadline_exceeded``, ``cancelled``, ``queue_full``, ``scheduler_stopped``,
    ``out_of_memory``, ``engine_error`` or an ``EngineError`` code of the engine.
    """

    code = "request_failed"


@dataclasses.dataclass(frozen=True)
class SchedulerConfig:
    # Caps below the engine's capacity (None: use the engine's).
    max_batch_size: int | None = None
    max_batch_tokens: int | None = None
    # Fixed-batch engines only. 0 (default): an idle device is never kept
    # waiting while work waits (docs/architecture.md, "The scheduler"). > 0: an idle device may
    # hold a partial batch until it is full or its oldest request has waited
    # this long, whichever first; a request that already waited through a busy
    # call is never held further. It never applies while the device is busy.
    max_wait_ms: float = 0.0
    # A free request older than this ranks with paid ones by arrival order.
    free_age_bound_s: float = 10.0
    # Continuous engines: the most of the batch's sequence slots batch-priority
    # work may hold at once (fixed-batch engines give it whatever room a call
    # has left, since a call holds nothing past itself).
    batch_slot_share: float = 0.5
    # Waiting requests beyond this are refused at submit (queue_full).
    max_queue: int = 10_000
    # Window for tokens/s and requests/s in stats().
    stats_window_s: float = 10.0


@dataclasses.dataclass(frozen=True)
class GenerationResult:
    request_id: str
    text: str
    token_ids: tuple[int, ...]
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    queued_s: float          # submit -> first step
    latency_s: float         # submit -> finished
    first_token_s: float | None = None  # submit -> the first output (None: there was none)


@dataclasses.dataclass(frozen=True)
class SchedulerStats:
    """A snapshot for heartbeats and metrics."""

    model: str
    queue_length: int
    queue_paid: int
    queue_free: int
    queue_batch: int
    running: int
    max_batch_size: int
    free_slots: int           # sequences the device could take right now
    tokens_per_s: float       # over the last stats_window_s
    requests_per_s: float     # completed, over the last stats_window_s
    busy_fraction: float      # device time in steps, over the last stats_window_s
    steps: int
    engine_calls: int         # > steps when failing batches were split
    last_batch_size: int
    mean_batch_size: float
    batch_sizes: dict[int, int]
    completed: int
    failed: int
    cancelled: int
    expired: int
    oldest_wait_s: float
    healthy: bool

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


WAITING, RUNNING, DONE = "waiting", "running", "done"


class RequestHandle:
    """The caller's side of one request: result, cancellation, streamed text.

    Callbacks run on the scheduler thread, in order (every ``on_token`` before
    ``on_done``/``on_error``); keep them short (publish and return). An
    exception in a callback is logged and does not affect the request.

    The handle is also the scheduler's record of the request: the scheduler
    writes its underscored fields, always under its own lock.
    """

    def __init__(self, cancel: Callable[[RequestHandle, str], bool], seq: Sequence,
                 priority: Priority,
                 deadline: float | None, submitted_at: float, order: int,
                 on_token: TokenCallback | None, on_done: DoneCallback | None,
                 on_error: ErrorCallback | None, footprint: int = 0):
        self._cancel = cancel  # the scheduler's, which owns the request
        self.seq = seq
        self.priority = priority
        self.deadline = deadline
        self.submitted_at = submitted_at
        self.started_at: float | None = None
        self.first_token_at: float | None = None
        self.finished_at: float | None = None
        self._order = order
        self._on_token, self._on_done, self._on_error = on_token, on_done, on_error
        self._state = WAITING
        self._chunks: list[str] = []
        self._token_ids: list[int] = []
        self._completion_tokens = 0
        self._footprint = footprint
        self._cancel_reason: str | None = None
        # What the engine made for it in the step that was running when it was
        # cancelled (that step's output is discarded): the work a cancel cost.
        self.tokens_after_cancel = 0
        self._result: GenerationResult | None = None
        self._error: RequestFailed | None = None
        self._event = threading.Event()

    @property
    def id(self) -> str:
        return self.seq.id

    @property
    def text(self) -> str:
        """Text produced so far."""
        return "".join(self._chunks)

    @property
    def completion_tokens(self) -> int:
        """Tokens made for it so far (a cancelled step's included)."""
        return self._completion_tokens + self.tokens_after_cancel

    @property
    def error(self) -> RequestFailed | None:
        return self._error

    def done(self) -> bool:
        return self._event.is_set()

    def result(self, timeout: float | None = None) -> GenerationResult:
        """Block until the request finishes (real seconds). Raises
        ``RequestFailed`` if it failed, ``TimeoutError`` if ``timeout`` passed
        first (the request keeps going: call ``cancel`` to stop it)."""
        if not self._event.wait(timeout):
            raise TimeoutError(f"request {self.id} still in progress after {timeout}s")
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def cancel(self, reason: str = "client went away") -> bool:
        """Cancel the request; False if it had already finished."""
        return self._cancel(self, reason)

    def _take(self, r: StepResult, now: float) -> tuple[int, str | None]:
        """Record one step's output (under the scheduler's lock); returns the
        tokens it made and its finish reason (None: it goes on)."""
        produced = produced_tokens(r)
        self._completion_tokens += produced
        self._token_ids.extend(r.token_ids)
        if produced and self.first_token_at is None:
            self.first_token_at = now
        if r.text:
            self._chunks.append(r.text)
        finish = (r.finish_reason or "stop") if r.finished else None
        if finish is None and self._completion_tokens >= self.seq.params.max_tokens:
            finish = "length"   # an engine that overran max_tokens is cut off
        return produced, finish

    def _stop_error(self, now: float) -> RequestFailed | None:
        """Why a running request must stop at this step boundary (cancelled or
        past its deadline), or None."""
        if self._cancel_reason is not None:
            return RequestFailed(f"cancelled: {self._cancel_reason}", code="cancelled")
        if self.deadline is not None and self.deadline <= now:
            return RequestFailed("deadline exceeded while running; stopped",
                                 code="deadline_exceeded")
        return None

    def _finish(self, now: float, *, finish_reason: str | None = None,
                error: RequestFailed | None = None) -> Callable[[], None]:
        """Mark the request done (under the scheduler's lock); returns the
        notification to run after the lock is released."""
        self._state = DONE
        self.finished_at = now
        if error is not None:
            self._error = error
        else:
            self._result = GenerationResult(
                request_id=self.id, text="".join(self._chunks), token_ids=tuple(self._token_ids),
                finish_reason=finish_reason or "stop", prompt_tokens=len(self.seq.prompt_tokens),
                completion_tokens=self._completion_tokens,
                queued_s=(self.started_at if self.started_at is not None else now)
                - self.submitted_at,
                latency_s=now - self.submitted_at,
                first_token_s=None if self.first_token_at is None
                else self.first_token_at - self.submitted_at)

        def notify() -> None:
            if self._error is not None:
                call_safely(self._on_error, self._error.code, str(self._error))
            else:
                call_safely(self._on_done, self._result)
        return notify

    def _token_notifier(self, delta: str) -> Callable[[], None]:
        return lambda: call_safely(self._on_token, delta)

    def __repr__(self) -> str:
        return f"<RequestHandle {self.id} {self.priority.name.lower()} {self._state}>"


# What a step did to a request: (handle, its notification, release its engine state).
Outcome = tuple[RequestHandle, Callable[[], None], bool]


def deliver_outcomes(outcomes: list[Outcome], deliver: Callable[[], contextlib.AbstractContextManager],
                     release: Callable[[str], None], name: str) -> None:
    """Release the engine state of the requests that left, then ``notify_outcomes``."""
    release_outcomes(outcomes, release, name)
    notify_outcomes(outcomes, deliver)


def release_outcomes(outcomes: list[Outcome], release: Callable[[str], None], name: str) -> None:
    """The engine state of the requests that left (on the engine's thread)."""
    for h, _, release_it in outcomes:
        if release_it:
            try:
                release(h.id)
            except Exception:
                log.exception("%s: engine.release(%s) failed", name, h.id)


def notify_outcomes(outcomes: list[Outcome],
                    deliver: Callable[[], contextlib.AbstractContextManager]) -> None:
    """Run the requests' notifications inside ``deliver()``; then wake the
    threads waiting on them."""
    if not outcomes:
        return
    try:
        with deliver():
            for _, notify, _ in outcomes:
                notify()
    finally:
        for h in {h.id: h for h, _, _ in outcomes if h._state == DONE}.values():
            h._event.set()  # after the callbacks: a waiter finds its result delivered


def produced_tokens(r: StepResult) -> int:
    """Tokens a step made for a sequence (text with no token ids counts as one)."""
    return len(r.token_ids) or (1 if r.text else 0)


def call_safely(callback: Callable[..., None] | None, *args: Any) -> None:
    """Call ``callback`` (if any), logging what it raises: a caller's callback
    must not break the scheduler's thread."""
    if callback is None:
        return
    try:
        callback(*args)
    except Exception:
        log.exception("request callback %r failed", callback)
