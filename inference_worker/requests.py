"""What a caller holds for one request: its handle, result and failure types,
plus the scheduler's configuration and stats records."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from core.vocabulary import Priority
from inference_worker.engines.base import EngineError, Sequence

if TYPE_CHECKING:
    from inference_worker.scheduler import Scheduler

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

    def __init__(self, scheduler: Scheduler, seq: Sequence, priority: Priority,
                 deadline: float | None, submitted_at: float, order: int,
                 on_token: TokenCallback | None, on_done: DoneCallback | None,
                 on_error: ErrorCallback | None, footprint: int = 0):
        self._scheduler = scheduler
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
        return self._scheduler.cancel(self, reason)

    def __repr__(self) -> str:
        return f"<RequestHandle {self.id} {self.priority.name.lower()} {self._state}>"
