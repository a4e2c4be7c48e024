"""The requests waiting for a device and the policy that picks which run next.

- priority: paid before free, FIFO within a tier; a free request waiting
  longer than ``free_age_bound_s`` competes with paid ones by arrival order, so
  free traffic is never starved; batch work takes only the slots interactive
  work leaves empty;
- room: a batch holds at most ``max_batch_size`` sequences and
  ``max_batch_tokens`` tokens (prompt + max_tokens reserved per sequence);
  a big request at the head of its queue waits for room, it is not overtaken;
- holding: an idle fixed-batch device may hold a partial batch for
  ``max_wait_ms``, bounded by the oldest request's age;
- deadlines: a waiting request whose deadline passed leaves its queue.

The scheduler calls ``WaitingQueues`` under its lock.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator
from typing import Any

from inference_worker.engines.base import Engine, EngineError, Sequence
from inference_worker.requests import RUNNING, Priority, RequestFailed, RequestHandle, SchedulerConfig


def deadline_at(now: float, deadline: float | None, timeout: float | None) -> float | None:
    """The earlier of ``deadline`` (absolute) and ``now + timeout``; raises
    RequestFailed (deadline_exceeded) when it has already passed."""
    if timeout is not None:
        deadline = now + timeout if deadline is None else min(deadline, now + timeout)
    if deadline is not None and deadline <= now:
        raise RequestFailed("deadline already passed at submit", code="deadline_exceeded")
    return deadline


def batch_limits(engine: Engine, config: SchedulerConfig) -> tuple[int, int, int]:
    """(max_batch_size, max_batch_tokens, batch_slots): the config's caps under
    the engine's capacity (ValueError when a cap is below 1)."""
    cap = engine.capacity
    size = min(cap.max_batch_size, config.max_batch_size or cap.max_batch_size)
    tokens = min(cap.max_batch_tokens, config.max_batch_tokens or cap.max_batch_tokens)
    if size < 1 or tokens < 1:
        raise ValueError("max_batch_size and max_batch_tokens must be at least 1")
    return size, tokens, max(1, int(size * config.batch_slot_share))


def prepare_footprint(engine: Engine, seq: Sequence, max_batch_tokens: int,
                      context_window: int) -> int:
    """Check and prepare ``seq`` for ``engine`` (on the caller's thread, outside
    the scheduler's lock: tokenizing can be slow); returns the tokens it
    reserves. Raises EngineError for a request larger than a whole batch."""
    engine.check_supported(seq.params)
    engine.prepare(seq)
    # Reserve the worst case (prompt + max_tokens): admitted sequences can
    # then always run to completion without outgrowing the device.
    footprint = min(len(seq.prompt_tokens) + seq.params.max_tokens, context_window)
    if footprint > max_batch_tokens:
        raise EngineError(
            f"request needs {footprint} tokens (prompt + max_tokens), more than one "
            f"batch holds ({max_batch_tokens})", code="too_many_tokens")
    return footprint


class WaitingQueues:
    """One FIFO queue per priority."""

    def __init__(self) -> None:
        self.by_priority: dict[Priority, collections.deque[RequestHandle]] = {
            Priority.PAID: collections.deque(), Priority.FREE: collections.deque(),
            Priority.BATCH: collections.deque()}

    def __len__(self) -> int:
        return sum(len(q) for q in self.by_priority.values())

    def __iter__(self) -> Iterator[RequestHandle]:
        return (h for q in self.by_priority.values() for h in q)

    def count(self, priority: Priority) -> int:
        return len(self.by_priority[priority])

    def append(self, h: RequestHandle) -> None:
        self.by_priority[h.priority].append(h)

    def remove(self, h: RequestHandle) -> None:
        self.by_priority[h.priority].remove(h)

    def _remove_where(self, drop: Callable[[RequestHandle], bool]) -> list[RequestHandle]:
        gone = []
        for queue in self.by_priority.values():
            if not any(drop(h) for h in queue):
                continue
            for h in [h for h in queue if drop(h)]:
                queue.remove(h)
                gone.append(h)
        return gone

    def expire(self, now: float) -> list[tuple[RequestHandle, RequestFailed]]:
        """Remove the requests whose deadline passed; returns them with their error."""
        return [(h, RequestFailed(f"deadline exceeded after waiting {now - h.submitted_at:.3f}s "
                                  "in the queue; not run", code="deadline_exceeded"))
                for h in self._remove_where(lambda h: h.deadline is not None and h.deadline <= now)]

    def too_big(self, max_batch_tokens: int) -> list[tuple[RequestHandle, RequestFailed]]:
        """Remove the requests that no longer fit in one batch (new settings),
        which would block their queue for ever; returns them with their error."""
        return [(h, RequestFailed(
            f"request needs {h._footprint} tokens (prompt + max_tokens), more than one "
            f"batch holds under the new settings ({max_batch_tokens})", code="too_many_tokens"))
            for h in self._remove_where(lambda h: h._footprint > max_batch_tokens)]

    def pop_all(self) -> list[RequestHandle]:
        gone = list(self)
        for queue in self.by_priority.values():
            queue.clear()
        return gone

    def stats_fields(self, now: float) -> dict[str, Any]:
        """The queue's part of ``SchedulerStats``."""
        heads = [q[0].submitted_at for q in self.by_priority.values() if q]
        return {"queue_length": len(self), "queue_paid": self.count(Priority.PAID),
                "queue_free": self.count(Priority.FREE), "queue_batch": self.count(Priority.BATCH),
                "oldest_wait_s": now - min(heads) if heads else 0.0}

    def hold_s(self, now: float, wait_s: float, max_batch_size: int,
               max_batch_tokens: int) -> float | None:
        """Seconds to keep an idle fixed-batch device waiting for a fuller
        batch, or None to go now."""
        waiting = list(self)
        if not waiting or len(waiting) >= max_batch_size:
            return None
        if sum(h._footprint for h in waiting) >= max_batch_tokens:
            return None
        flush_at = min(h.submitted_at for h in waiting) + wait_s
        if flush_at <= now:
            return None
        # Wake for an earlier deadline too, so expiry is reported on time.
        deadlines = [h.deadline for h in waiting if h.deadline is not None]
        return min([flush_at, *deadlines]) - now

    def _next_queue(self, now: float, free_age_bound_s: float,
                    batch_room: bool) -> collections.deque[RequestHandle] | None:
        paid, free = self.by_priority[Priority.PAID], self.by_priority[Priority.FREE]
        if not free:
            return paid or (self.by_priority[Priority.BATCH] if batch_room else None) or None
        if not paid:
            return free
        promoted = now - free[0].submitted_at >= free_age_bound_s
        return free if promoted and free[0]._order < paid[0]._order else paid

    def admit(self, running: dict[str, RequestHandle], now: float, *, max_batch_size: int,
              max_batch_tokens: int, batch_slots: int, fixed_batch: bool,
              free_age_bound_s: float) -> list[RequestHandle]:
        """Move the requests that join the next step into ``running``; returns them."""
        tokens = sum(h._footprint for h in running.values())
        batch_running = sum(1 for h in running.values() if h.priority == Priority.BATCH)
        new = []
        while len(running) < max_batch_size:
            # Batch work takes only slots interactive work leaves empty, and on
            # a continuous engine (where it holds them for many steps) at most
            # its share, so that interactive arrivals find room at the next step.
            batch_room = fixed_batch or batch_running < batch_slots
            queue = self._next_queue(now, free_age_bound_s, batch_room)
            if queue is None:
                break
            # Strict order: a big request at the head is not overtaken (it
            # would starve), it waits for room.
            if tokens + queue[0]._footprint > max_batch_tokens:
                break
            h = queue.popleft()
            tokens += h._footprint
            batch_running += h.priority == Priority.BATCH
            h._state = RUNNING
            h.started_at = now
            running[h.id] = h
            new.append(h)
        return new
