"""The per-device scheduler: one thread owns the engine and runs one step at a time.

Callers (a Celery task thread, the embedded in-process server)
``submit`` a sequence and get a ``RequestHandle``: tokens stream through its
callbacks and ``handle.result(timeout)`` blocks for the final result. The
scheduler thread decides what runs in each step:

- continuous batching: between steps, finished and cancelled sequences leave
  and waiting ones join (who joins, and when an idle device waits for a fuller
  batch: ``inference_worker.admission``);
- fixed-batch engines (one call maps inputs to outputs): a batch is sealed only
  when the device is free, so everything that arrived during a call goes into
  the next call at once (up to the size cap);
- deadlines: a request whose deadline passed is dropped at the next step
  boundary with ``deadline_exceeded`` (never run if it was still waiting);
- cancellation: ``handle.cancel()`` (a client that went away) removes a
  waiting request at once, or a running one at the next step boundary, and the
  engine releases its state;
- partial failure: if ``engine.step`` raises, the batch is split in halves and
  retried recursively, so only the failing sequence(s) get an error and the
  rest complete (``inference_worker.isolation``).

Time is read only through an injectable clock (``inference_worker.clock``):
tests and the benchmark drive ``run_once`` on a virtual clock, with no sleeps.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any

from inference_worker.admission import WaitingQueues, batch_limits, deadline_at, prepare_footprint
from inference_worker.clock import RealClock
from inference_worker.delivery import Deliverer
from inference_worker.engines.base import Engine, EngineError, Sequence, StepResult
from inference_worker.isolation import IsolatingStepper
from inference_worker.requests import (
    DONE,
    WAITING,
    DoneCallback,
    ErrorCallback,
    Outcome,
    Priority,
    RequestFailed,
    RequestHandle,
    SchedulerConfig,
    SchedulerStats,
    TokenCallback,
    deliver_outcomes,
    produced_tokens,
    release_outcomes,
)
from inference_worker.stepstats import StepWindow, Tally

log = logging.getLogger(__name__)

class Scheduler:
    def __init__(self, engine: Engine, config: SchedulerConfig | None = None, *,
                 clock: Any = None, name: str | None = None,
                 deliver: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext):
        """``deliver()``: the context in which the requests' callbacks of one step
        run (the worker sends the step's events at its end,
        core.redis.PipelineWriter.held); the threads waiting on those requests
        wake after it."""
        self.engine = engine
        self.deliver = deliver
        self.config = config or SchedulerConfig()
        self.clock = clock or RealClock()
        self.name = name or engine.model_name or type(engine).__name__
        cap = engine.capacity
        self.fixed_batch = cap.fixed_batch
        self.context_window = cap.context_window
        self.max_batch_size, self.max_batch_tokens, self.batch_slots = batch_limits(engine, self.config)

        self._lock = threading.Condition()
        self._waiting = WaitingQueues()
        self._running: dict[str, RequestHandle] = {}  # insertion order = join order
        self._ids: set[str] = set()                   # waiting or running
        self._order = itertools.count()
        self._dirty = False          # work arrived or changed since run_once looked
        self._stopping = False
        self._drain = False
        self._thread: threading.Thread | None = None
        self._deliverer: Deliverer | None = None  # while running as a thread
        self.healthy = True                   # engine.health(), as of check_health()
        self._stepper = IsolatingStepper(engine, self.name)
        self._tally = Tally()  # written by the scheduler thread, read by stats()
        self._window = StepWindow(self.config.stats_window_s)

    def reconfigure(self, config: SchedulerConfig) -> None:
        """Apply new settings live (a config document), atomically between steps:
        every scheduling decision is made under the lock, so the next one uses
        all of the new settings and none before it did; a running step is not
        disturbed. Running sequences keep their room (their tokens were
        reserved); a waiting request that no longer fits in one batch (a lower
        max_batch_tokens) fails with too_many_tokens."""
        size, tokens, slots = batch_limits(self.engine, config)
        events = []
        with self._lock:
            self.config = config
            self.max_batch_size, self.max_batch_tokens, self.batch_slots = size, tokens, slots
            self._window.span_s = config.stats_window_s
            for h, error in self._waiting.too_big(tokens):
                self._ids.discard(h.id)
                self._tally.failed += 1
                events.append((h, self._finish(h, error=error), False))
            self._dirty = True
            self._lock.notify_all()
        self._release_and_notify(events)

    # ---- submitting -------------------------------------------------------

    def submit(self, seq: Sequence, priority: Priority | str = Priority.PAID,
               deadline: float | None = None, *, timeout: float | None = None,
               on_token: TokenCallback | None = None, on_done: DoneCallback | None = None,
               on_error: ErrorCallback | None = None) -> RequestHandle:
        """Queue ``seq``. ``deadline`` is absolute on ``self.clock`` (``timeout``:
        the same, relative to now). Bad requests fail fast here, before queueing:
        the engine's ``prepare`` (EngineError), a request larger than a whole
        batch, a passed deadline, a full queue, a stopped scheduler."""
        return self.submit_together([(seq, on_token)], priority, deadline, timeout=timeout,
                                    on_done=on_done, on_error=on_error)[0]

    def submit_together(self, items: list[tuple[Sequence, TokenCallback | None]],
                        priority: Priority | str = Priority.PAID, deadline: float | None = None, *,
                        timeout: float | None = None, on_done: DoneCallback | None = None,
                        on_error: ErrorCallback | None = None) -> list[RequestHandle]:
        """Queue several sequences (one request's n choices, each with its token
        callback) as ``submit`` does, all or none, in one hold of the lock: no step
        starts between them, so they join the same step when it has room and an
        engine can share their prompt's prefill."""
        priority = Priority.parse(priority)
        footprints = [prepare_footprint(self.engine, seq, self.max_batch_tokens, self.context_window)
                      for seq, _ in items]
        now = self.clock.now()
        deadline = deadline_at(now, deadline, timeout)
        with self._lock:
            if self._stopping:
                raise RequestFailed("the scheduler is stopping", code="scheduler_stopped")
            ids = [seq.id for seq, _ in items]
            for seq_id in ids:
                if seq_id in self._ids or ids.count(seq_id) > 1:
                    raise EngineError(f"request id {seq_id!r} is already queued or running",
                                      code="duplicate_request")
            if len(self._waiting) + len(items) > self.config.max_queue:
                raise RequestFailed(f"queue full ({self.config.max_queue} waiting)", code="queue_full")
            handles = []
            for (seq, on_token), footprint in zip(items, footprints, strict=True):
                handle = RequestHandle(self.cancel, seq, priority, deadline, now, next(self._order),
                                       on_token, on_done, on_error, footprint)
                self._waiting.append(handle)
                self._ids.add(seq.id)
                handles.append(handle)
            self._dirty = True
            self._lock.notify_all()
        return handles

    def cancel(self, handle: RequestHandle, reason: str) -> bool:
        """Cancel ``handle``'s request (``RequestHandle.cancel`` calls this)."""
        with self._lock:
            if handle._state == DONE:
                return False
            if handle._state == WAITING:
                self._waiting.remove(handle)
                self._ids.discard(handle.id)
                self._tally.cancelled += 1
                notify = self._finish(handle, error=RequestFailed(
                    f"cancelled: {reason}", code="cancelled"))
            else:
                # Running: the engine is owned by the scheduler thread, which
                # releases the sequence at the next step boundary.
                handle._cancel_reason = reason
                self._dirty = True
                self._lock.notify_all()
                return True
        self._release_and_notify([(handle, notify, False)])
        return True

    # ---- the loop ---------------------------------------------------------

    def run_once(self) -> float | None:
        """Make one scheduling decision and run at most one step.

        Returns 0.0 after running a step (call again at once), a number of
        seconds to wait before calling again (a held partial batch or a waiting
        deadline), or None when there is nothing to do until a submit."""
        with self._lock:
            self._dirty = False
            gone = self._reap_locked(self.clock.now())
        self._release_and_notify(gone)

        with self._lock:
            now = self.clock.now()
            hold = self._hold_locked(now)
        if hold is not None:
            return hold
        with self._lock:
            now = self.clock.now()
            new = self._waiting.admit(
                self._running, now, max_batch_size=self.max_batch_size,
                max_batch_tokens=self.max_batch_tokens, batch_slots=self.batch_slots,
                fixed_batch=self.fixed_batch, free_age_bound_s=self.config.free_age_bound_s)
            batch = list(self._running.values())
            if not batch:
                return None
            new_ids = {h.id for h in new}
            running = [h.seq for h in batch if h.id not in new_ids]
            started = self.clock.now()
        results, errors = self._stepper.step(running, [h.seq for h in new])
        return self._apply(batch, results, errors, started)

    def _reap_locked(self, now: float) -> list[Outcome]:
        """Drop cancelled and expired requests; returns (handle, notify, release)."""
        gone = []
        for h, error in self._waiting.expire(now):
            self._ids.discard(h.id)
            self._tally.expired += 1
            gone.append((h, self._finish(h, error=error), False))
        for h in list(self._running.values()):
            err = h._stop_error(now)
            if err is None:
                continue
            if err.code == "cancelled":
                self._tally.cancelled += 1
            else:
                self._tally.expired += 1
            del self._running[h.id]
            self._ids.discard(h.id)
            gone.append((h, self._finish(h, error=err), True))
        return gone

    def _hold_locked(self, now: float) -> float | None:
        """Seconds to keep an idle fixed-batch device waiting, or None to go."""
        wait_s = self.config.max_wait_ms / 1000.0
        idle = self.fixed_batch and wait_s > 0 and not self._running
        return self._waiting.hold_s(now, wait_s, self.max_batch_size, self.max_batch_tokens) if idle else None

    def _apply(self, batch: list[RequestHandle], results: dict[str, StepResult],
               errors: dict[str, RequestFailed], started: float) -> float:
        events: list[Outcome] = []
        tokens = completed = 0
        with self._lock:
            now = self.clock.now()
            self._tally.step(len(batch))
            for h in batch:
                if h._state == DONE:
                    continue
                if h._cancel_reason is not None:
                    # Cancelled during the step: its output is discarded.
                    r = results.get(h.id)
                    if r is not None:  # the engine made it all the same
                        h.tokens_after_cancel = produced_tokens(r)
                    self._tally.cancelled += 1
                    self._drop_running(h)
                    events.append((h, self._finish(h, error=RequestFailed(
                        f"cancelled: {h._cancel_reason}", code="cancelled")), True))
                    continue
                if h.id in errors:
                    self._tally.failed += 1
                    self._drop_running(h)
                    events.append((h, self._finish(h, error=errors[h.id]), True))
                    continue
                r = results[h.id]
                produced, finish = h._take(r, now)
                tokens += produced
                if r.text:
                    events.append((h, h._token_notifier(r.text), False))
                if finish is not None:
                    completed += 1
                    self._tally.completed += 1
                    self._drop_running(h)
                    events.append((h, self._finish(h, finish_reason=finish), True))
            self._window.add(now, tokens, completed, now - started)
        self._release_and_notify(events)
        return 0.0

    def _drop_running(self, h: RequestHandle) -> None:
        self._running.pop(h.id, None)
        self._ids.discard(h.id)

    def _finish(self, h: RequestHandle, *, finish_reason: str | None = None,
                error: RequestFailed | None = None) -> Callable[[], None]:
        return h._finish(self.clock.now(), finish_reason=finish_reason, error=error)

    def _release_and_notify(self, events: list[Outcome]) -> None:
        deliverer = self._deliverer
        if deliverer is None:
            deliver_outcomes(events, self.deliver, self.engine.release, self.name)
        else:
            release_outcomes(events, self.engine.release, self.name)
            deliverer.put(events)

    # ---- running as a thread ------------------------------------------------

    def start(self) -> Scheduler:
        """Run the loop on a daemon thread (the one thread that owns the engine)."""
        if self._thread is None:
            self._deliverer = Deliverer(lambda: self.deliver, self.name)
            self._thread = threading.Thread(target=self._loop, name=f"scheduler-{self.name}", daemon=True)
            self._thread.start()
        return self

    def stop(self, *, drain: bool = False, timeout: float | None = None) -> None:
        """Stop the loop. ``drain``: finish what is queued first; otherwise
        waiting and running requests fail with ``scheduler_stopped``."""
        with self._lock:
            self._stopping = True
            self._drain = drain
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        if not drain:
            self._fail_all("scheduler_stopped", "the scheduler stopped before this request ran")
        deliverer, self._deliverer = self._deliverer, None
        if deliverer is not None:
            deliverer.close(timeout)

    def _fail_all(self, code: str, message: str) -> None:
        events = []
        with self._lock:
            for h in self._waiting.pop_all():
                events.append((h, self._finish(h, error=RequestFailed(message, code=code)), False))
            for h in list(self._running.values()):
                self._drop_running(h)
                events.append((h, self._finish(h, error=RequestFailed(message, code=code)), True))
            self._ids.clear()
        self._release_and_notify(events)

    def _loop(self) -> None:
        while True:
            with self._lock:
                if self._stopping and (not self._drain or not self._ids):
                    return
            try:
                delay = self.run_once()
            except Exception:  # a bug here must not kill the device's only thread
                log.exception("%s: scheduler loop error", self.name)
                delay = 0.1
            if delay == 0:
                continue
            with self._lock:
                if not self._dirty and not self._stopping:
                    self.clock.wait(self._lock, delay)

    # ---- introspection ----------------------------------------------------

    def check_health(self) -> bool:
        """Ask the engine (for an upstream engine, an HTTP call): called by the
        heartbeat thread, never under the scheduler's lock."""
        try:
            self.healthy = bool(self.engine.health())
        except Exception:
            self.healthy = False
        return self.healthy

    def stats(self) -> SchedulerStats:
        with self._lock:
            now = self.clock.now()
            tokens_per_s, requests_per_s, busy_fraction = self._window.rates(now)
            return SchedulerStats(
                model=self.name, running=len(self._running), max_batch_size=self.max_batch_size,
                free_slots=max(0, self.max_batch_size - len(self._running) - len(self._waiting)),
                tokens_per_s=tokens_per_s, requests_per_s=requests_per_s,
                busy_fraction=busy_fraction, engine_calls=self._stepper.calls, healthy=self.healthy,
                **self._waiting.stats_fields(now), **self._tally.fields())

