"""The per-device scheduler: one thread owns the engine and runs one step at a time.

Callers (a Celery task thread, the embedded in-process server)
``submit`` a sequence and get a ``RequestHandle``: tokens stream through its
callbacks and ``handle.result(timeout)`` blocks for the final result. The
scheduler thread decides what runs in each step:

- continuous batching: between steps, finished and cancelled sequences leave
  and waiting ones join, up to ``max_batch_size`` sequences and
  ``max_batch_tokens`` tokens (prompt + max_tokens reserved per sequence, so a
  running batch can never outgrow the device);
- fixed-batch engines (one call maps inputs to outputs): a batch is sealed only
  when the device is free, so everything that arrived during a call goes into
  the next call at once (up to the size cap), and an idle device is handed
  waiting work immediately. ``max_wait_ms`` (default 0) can make an idle device
  hold a partial batch, bounded by the oldest request's age; see
  ``SchedulerConfig``;
- priority: paid before free, FIFO within a tier; a free request waiting
  longer than ``free_age_bound_s`` competes with paid ones by arrival order, so
  free traffic is never starved;
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

import collections
import contextlib
import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any

from inference_worker.clock import RealClock
from inference_worker.engines.base import Engine, EngineError, Sequence, StepResult
from inference_worker.isolation import IsolatingStepper
from inference_worker.requests import (  # noqa: F401 (re-exported: the scheduler's public API)
    DONE,
    RUNNING,
    WAITING,
    DoneCallback,
    ErrorCallback,
    GenerationResult,
    Priority,
    RequestFailed,
    RequestHandle,
    SchedulerConfig,
    SchedulerStats,
    TokenCallback,
)
from inference_worker.stepstats import StepWindow

log = logging.getLogger(__name__)

class Scheduler:
    def __init__(self, engine: Engine, config: SchedulerConfig | None = None, *,
                 clock: Any = None, name: str | None = None,
                 on_change: Callable[[Scheduler], None] | None = None,
                 deliver: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext):
        """``on_change(scheduler)`` is called (outside the lock) whenever the
        queue or the device's busy time changes: the worker publishes the
        device state for routing from it. ``deliver()``: the context in which
        the requests' callbacks of one step run (the worker sends the step's
        events at its end, core.redis.PipelineWriter.held); the threads
        waiting on those requests wake after it."""
        self.engine = engine
        self.on_change = on_change
        self.deliver = deliver
        self.config = config or SchedulerConfig()
        self.clock = clock or RealClock()
        self.name = name or engine.model_name or type(engine).__name__
        cap = engine.capacity
        self.fixed_batch = cap.fixed_batch
        self.context_window = cap.context_window
        self.max_batch_size, self.max_batch_tokens, self.batch_slots = self._limits(self.config)

        self._lock = threading.Condition()
        self._waiting: dict[Priority, collections.deque[RequestHandle]] = {
            Priority.PAID: collections.deque(), Priority.FREE: collections.deque(),
            Priority.BATCH: collections.deque()}
        self._running: dict[str, RequestHandle] = {}  # insertion order = join order
        self._ids: set[str] = set()                   # waiting or running
        self._order = itertools.count()
        self._dirty = False          # work arrived or changed since run_once looked
        self._stepping = False       # the scheduler thread is inside an engine step
        self._stopping = False
        self._drain = False
        self._thread: threading.Thread | None = None
        self._busy_until = self.clock.now()   # the running step's expected end
        self.healthy = True                   # engine.health(), as of check_health()
        self._stepper = IsolatingStepper(engine, self.name)

        # counters (written by the scheduler thread, read by stats())
        self._steps = self._last_batch = self._batched = 0
        self._batch_sizes: collections.Counter[int] = collections.Counter()
        self._completed = self._failed = self._cancelled = self._expired = 0
        self._window = StepWindow(self.config.stats_window_s)

    def _limits(self, config: SchedulerConfig) -> tuple[int, int, int]:
        """(max_batch_size, max_batch_tokens, batch_slots): the config's caps
        under the engine's capacity (ValueError when a cap is below 1)."""
        cap = self.engine.capacity
        size = min(cap.max_batch_size, config.max_batch_size or cap.max_batch_size)
        tokens = min(cap.max_batch_tokens, config.max_batch_tokens or cap.max_batch_tokens)
        if size < 1 or tokens < 1:
            raise ValueError("max_batch_size and max_batch_tokens must be at least 1")
        return size, tokens, max(1, int(size * config.batch_slot_share))

    def reconfigure(self, config: SchedulerConfig) -> None:
        """Apply new settings live (a config document), atomically between steps:
        every scheduling decision is made under the lock, so the next one uses
        all of the new settings and none before it did; a running step is not
        disturbed. Running sequences keep their room (their tokens were
        reserved); a waiting request that no longer fits in one batch (a lower
        max_batch_tokens) fails with too_many_tokens, since left at the head
        of its queue it would block everything behind it for ever."""
        size, tokens, slots = self._limits(config)
        events = []
        with self._lock:
            self.config = config
            self.max_batch_size, self.max_batch_tokens, self.batch_slots = size, tokens, slots
            self._window.span_s = config.stats_window_s
            for queue in self._waiting.values():
                for h in [h for h in queue if h._footprint > tokens]:
                    queue.remove(h)
                    self._ids.discard(h.id)
                    self._failed += 1
                    events.append((h, self._finish(h, error=RequestFailed(
                        f"request needs {h._footprint} tokens (prompt + max_tokens), more than one "
                        f"batch holds under the new settings ({tokens})", code="too_many_tokens")),
                        False))
            self._dirty = True
            self._lock.notify_all()
        self._release_and_notify(events)
        self._changed()

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
        footprints = []
        for seq, _ in items:
            # Tokenizing can be slow: do it on the caller's thread, outside the lock.
            self.engine.check_supported(seq.params)
            self.engine.prepare(seq)
            footprint = self._footprint(seq)
            if footprint > self.max_batch_tokens:
                raise EngineError(
                    f"request needs {footprint} tokens (prompt + max_tokens), more than one "
                    f"batch holds ({self.max_batch_tokens})", code="too_many_tokens")
            footprints.append(footprint)
        now = self.clock.now()
        if timeout is not None:
            deadline = now + timeout if deadline is None else min(deadline, now + timeout)
        if deadline is not None and deadline <= now:
            raise RequestFailed("deadline already passed at submit", code="deadline_exceeded")
        with self._lock:
            if self._stopping:
                raise RequestFailed("the scheduler is stopping", code="scheduler_stopped")
            ids = [seq.id for seq, _ in items]
            for seq_id in ids:
                if seq_id in self._ids or ids.count(seq_id) > 1:
                    raise EngineError(f"request id {seq_id!r} is already queued or running",
                                      code="duplicate_request")
            if self._queue_length() + len(items) > self.config.max_queue:
                raise RequestFailed(f"queue full ({self.config.max_queue} waiting)",
                                    code="queue_full")
            handles = []
            for (seq, on_token), footprint in zip(items, footprints, strict=True):
                handle = RequestHandle(self, seq, priority, deadline, now, next(self._order),
                                       on_token, on_done, on_error, footprint)
                self._waiting[priority].append(handle)
                self._ids.add(seq.id)
                handles.append(handle)
            self._dirty = True
            self._lock.notify_all()
            # Outside a step, the loop acts on this at once and publishes the state
            # itself (the step it starts, or a hold): one publication on the request's
            # path, not two. Inside a step it cannot, and the queued request must show.
            publish = self._stepping
        if publish:
            self._changed()
        return handles

    def _footprint(self, seq: Sequence) -> int:
        # Reserve the worst case (prompt + max_tokens): admitted sequences can
        # then always run to completion without outgrowing the device.
        return min(len(seq.prompt_tokens) + seq.params.max_tokens, self.context_window)

    def cancel(self, handle: RequestHandle, reason: str) -> bool:
        """Cancel ``handle``'s request (``RequestHandle.cancel`` calls this)."""
        with self._lock:
            if handle._state == DONE:
                return False
            if handle._state == WAITING:
                self._waiting[handle.priority].remove(handle)
                self._ids.discard(handle.id)
                self._cancelled += 1
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
            self._stepping = False  # already, unless the last step raised before _apply
            gone = self._reap_locked(self.clock.now())
        self._release_and_notify(gone)

        with self._lock:
            now = self.clock.now()
            hold = self._hold_locked(now)
        if hold is not None:
            self._changed()  # the submits that woke this thread left the state to it
            return hold
        with self._lock:
            now = self.clock.now()
            new = self._admit_locked(now)
            batch = list(self._running.values())
            if not batch:
                return None
            new_ids = {h.id for h in new}
            running = [h.seq for h in batch if h.id not in new_ids]
            started = self.clock.now()
            self._busy_until = started + (self._window.step_s or 0.0)
            self._stepping = True
        self._changed()
        results, errors = self._stepper.step(running, [h.seq for h in new])
        return self._apply(batch, results, errors, started)

    def _reap_locked(self, now: float) -> list[tuple[RequestHandle, Callable[[], None], bool]]:
        """Drop cancelled and expired requests; returns (handle, notify, release)."""
        gone = []
        for queue in self._waiting.values():
            if not any(h.deadline is not None and h.deadline <= now for h in queue):
                continue
            for h in [h for h in queue if h.deadline is not None and h.deadline <= now]:
                queue.remove(h)
                self._ids.discard(h.id)
                self._expired += 1
                gone.append((h, self._finish(h, error=RequestFailed(
                    f"deadline exceeded after waiting {now - h.submitted_at:.3f}s in the "
                    "queue; not run", code="deadline_exceeded")), False))
        for h in list(self._running.values()):
            if h._cancel_reason is not None:
                self._cancelled += 1
                err = RequestFailed(f"cancelled: {h._cancel_reason}", code="cancelled")
            elif h.deadline is not None and h.deadline <= now:
                self._expired += 1
                err = RequestFailed("deadline exceeded while running; stopped",
                                    code="deadline_exceeded")
            else:
                continue
            del self._running[h.id]
            self._ids.discard(h.id)
            gone.append((h, self._finish(h, error=err), True))
        return gone

    def _hold_locked(self, now: float) -> float | None:
        """Seconds to keep an idle fixed-batch device waiting, or None to go."""
        wait_s = self.config.max_wait_ms / 1000.0
        if not (self.fixed_batch and wait_s > 0 and not self._running):
            return None
        waiting = [h for q in self._waiting.values() for h in q]
        if not waiting or len(waiting) >= self.max_batch_size:
            return None
        if sum(h._footprint for h in waiting) >= self.max_batch_tokens:
            return None
        flush_at = min(h.submitted_at for h in waiting) + wait_s
        if flush_at <= now:
            return None
        # Wake for an earlier deadline too, so expiry is reported on time.
        deadlines = [h.deadline for h in waiting if h.deadline is not None]
        return min([flush_at, *deadlines]) - now

    def _next_queue_locked(self, now: float, batch_room: bool) -> collections.deque[RequestHandle] | None:
        paid, free = self._waiting[Priority.PAID], self._waiting[Priority.FREE]
        if not free:
            return paid or (self._waiting[Priority.BATCH] if batch_room else None) or None
        if not paid:
            return free
        promoted = now - free[0].submitted_at >= self.config.free_age_bound_s
        return free if promoted and free[0]._order < paid[0]._order else paid

    def _admit_locked(self, now: float) -> list[RequestHandle]:
        tokens = sum(h._footprint for h in self._running.values())
        batch_running = sum(1 for h in self._running.values() if h.priority == Priority.BATCH)
        new = []
        while len(self._running) < self.max_batch_size:
            # Batch work takes only slots interactive work leaves empty, and on
            # a continuous engine (where it holds them for many steps) at most
            # its share, so that interactive arrivals find room at the next step.
            batch_room = self.fixed_batch or batch_running < self.batch_slots
            queue = self._next_queue_locked(now, batch_room)
            if queue is None:
                break
            # Strict order: a big request at the head is not overtaken (it
            # would starve), it waits for room.
            if tokens + queue[0]._footprint > self.max_batch_tokens:
                break
            h = queue.popleft()
            tokens += h._footprint
            batch_running += h.priority == Priority.BATCH
            h._state = RUNNING
            h.started_at = now
            self._running[h.id] = h
            new.append(h)
        return new

    def _apply(self, batch: list[RequestHandle], results: dict[str, StepResult],
               errors: dict[str, RequestFailed], started: float) -> float:
        events: list[tuple[RequestHandle, Callable[[], None], bool]] = []
        tokens = completed = 0
        with self._lock:
            now = self.clock.now()
            self._busy_until = now
            self._stepping = False
            self._steps += 1
            self._last_batch = len(batch)
            self._batched += len(batch)
            self._batch_sizes[len(batch)] += 1
            for h in batch:
                if h._state == DONE:
                    continue
                if h._cancel_reason is not None:
                    # Cancelled during the step: its output is discarded.
                    r = results.get(h.id)
                    if r is not None:  # the engine made it all the same
                        h.tokens_after_cancel = len(r.token_ids) or (1 if r.text else 0)
                    self._cancelled += 1
                    self._drop_running(h)
                    events.append((h, self._finish(h, error=RequestFailed(
                        f"cancelled: {h._cancel_reason}", code="cancelled")), True))
                    continue
                if h.id in errors:
                    self._failed += 1
                    self._drop_running(h)
                    events.append((h, self._finish(h, error=errors[h.id]), True))
                    continue
                r = results[h.id]
                produced = len(r.token_ids) or (1 if r.text else 0)
                tokens += produced
                h._completion_tokens += produced
                h._token_ids.extend(r.token_ids)
                if produced and h.first_token_at is None:
                    h.first_token_at = now
                if r.text:
                    h._chunks.append(r.text)
                    events.append((h, _token_notifier(h, r.text), False))
                finish = (r.finish_reason or "stop") if r.finished else None
                if finish is None and h._completion_tokens >= h.seq.params.max_tokens:
                    finish = "length"   # an engine that overran max_tokens is cut off
                if finish is not None:
                    completed += 1
                    self._completed += 1
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
        """Mark ``h`` done (under the lock); returns the notification to run
        after the lock is released."""
        h._state = DONE
        h.finished_at = self.clock.now()
        if error is not None:
            h._error = error
        else:
            h._result = GenerationResult(
                request_id=h.id, text="".join(h._chunks), token_ids=tuple(h._token_ids),
                finish_reason=finish_reason or "stop", prompt_tokens=len(h.seq.prompt_tokens),
                completion_tokens=h._completion_tokens,
                queued_s=(h.started_at if h.started_at is not None else h.finished_at)
                - h.submitted_at,
                latency_s=h.finished_at - h.submitted_at,
                first_token_s=None if h.first_token_at is None else h.first_token_at - h.submitted_at)

        def notify() -> None:
            if h._error is not None:
                _safe(h._on_error, h._error.code, str(h._error))
            else:
                _safe(h._on_done, h._result)
        return notify

    def _release_and_notify(self, events: list[tuple[RequestHandle, Callable[[], None], bool]]
                            ) -> None:
        if not events:
            return
        try:
            with self.deliver():
                for h, notify, release in events:
                    if release:
                        try:
                            self.engine.release(h.id)
                        except Exception:
                            log.exception("%s: engine.release(%s) failed", self.name, h.id)
                    notify()
        finally:
            for h in {h.id: h for h, _, _ in events if h._state == DONE}.values():
                h._event.set()  # after the callbacks: a waiter finds its result delivered

    # ---- running as a thread ------------------------------------------------

    def start(self) -> Scheduler:
        """Run the loop on a daemon thread (the one thread that owns the engine)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"scheduler-{self.name}",
                                            daemon=True)
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

    def _fail_all(self, code: str, message: str) -> None:
        events = []
        with self._lock:
            for queue in self._waiting.values():
                while queue:
                    h = queue.popleft()
                    events.append((h, self._finish(h, error=RequestFailed(message, code=code)),
                                   False))
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

    def _queue_length(self) -> int:
        return sum(len(q) for q in self._waiting.values())

    def check_health(self) -> bool:
        """Ask the engine (for an upstream engine, an HTTP call): called by the
        heartbeat thread, never under the scheduler's lock."""
        try:
            self.healthy = bool(self.engine.health())
        except Exception:
            self.healthy = False
        return self.healthy

    def _changed(self) -> None:
        if self.on_change is not None:
            _safe(self.on_change, self)

    def device_state(self) -> dict:
        """When a new interactive request would start here (for routing), on
        this scheduler's clock: the next step's earliest start (the running
        step's expected end, or the end of a held idle batch), the interactive
        requests waiting ahead of it, the step duration and the idle hold."""
        with self._lock:
            now = self.clock.now()
            hold = self._hold_locked(now) if not self._running else None
            return {"busy_until": now + hold if hold is not None else self._busy_until, "now": now,
                    "waiting": len(self._waiting[Priority.PAID]) + len(self._waiting[Priority.FREE]),
                    "running": len(self._running), "max_batch_size": self.max_batch_size,
                    "step_s": self._window.step_s or 0.0, "fixed_batch": self.fixed_batch,
                    "hold_s": self.config.max_wait_ms / 1000.0 if self.fixed_batch else 0.0}

    def stats(self) -> SchedulerStats:
        with self._lock:
            now = self.clock.now()
            tokens_per_s, requests_per_s, busy_fraction = self._window.rates(now)
            heads = [q[0].submitted_at for q in self._waiting.values() if q]
            queued = self._queue_length()
            return SchedulerStats(
                model=self.name, queue_length=queued,
                queue_paid=len(self._waiting[Priority.PAID]),
                queue_free=len(self._waiting[Priority.FREE]),
                queue_batch=len(self._waiting[Priority.BATCH]),
                running=len(self._running), max_batch_size=self.max_batch_size,
                free_slots=max(0, self.max_batch_size - len(self._running) - queued),
                tokens_per_s=tokens_per_s, requests_per_s=requests_per_s,
                busy_fraction=busy_fraction, steps=self._steps,
                engine_calls=self._stepper.calls, last_batch_size=self._last_batch,
                mean_batch_size=self._batched / self._steps if self._steps else 0.0,
                batch_sizes=dict(self._batch_sizes), completed=self._completed,
                failed=self._failed, cancelled=self._cancelled, expired=self._expired,
                oldest_wait_s=now - min(heads) if heads else 0.0, healthy=self.healthy)


def _token_notifier(h: RequestHandle, delta: str) -> Callable[[], None]:
    return lambda: _safe(h._on_token, delta)


def _safe(callback: Callable[..., None] | None, *args: Any) -> None:
    if callback is None:
        return
    try:
        callback(*args)
    except Exception:
        log.exception("request callback %r failed", callback)
