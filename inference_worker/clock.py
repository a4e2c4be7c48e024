"""Clocks for the scheduler: the real one, and a virtual one for tests and the
batching benchmark.

The scheduler and the fixed-cost engine only ever read time through a clock,
so the same code runs against wall time in a worker and against virtual time
in a test or a discrete-event simulation (no sleeps, fully deterministic).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import cast


class RealClock:
    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        """Wait on ``cond`` (held by the caller) until notified or ``timeout``."""
        cond.wait(timeout)


class VirtualClock:
    """Virtual time plus a discrete-event queue.

    ``sleep(dt)``/``advance(dt)`` move time forward, running every event
    scheduled with ``call_at`` in time order on the way, with ``now()`` set to
    the event's time while it runs. So a fixed-cost engine "sleeping" through a
    200 ms call sees the requests that arrive during the call submitted at
    their own arrival times: a single-threaded, exact simulation.
    """

    def __init__(self, start: float = 0.0):
        self._now = start
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self._events, (max(when, self._now), next(self._order), fn))

    def next_event_time(self) -> float | None:
        return self._events[0][0] if self._events else None

    def advance(self, seconds: float) -> None:
        self.advance_to(self._now + max(seconds, 0.0))

    def advance_to(self, when: float) -> None:
        while self._events and self._events[0][0] <= when:
            t, _, fn = heapq.heappop(self._events)
            self._now = max(self._now, t)
            fn()
        self._now = max(self._now, when)

    def run_next_event(self) -> bool:
        """Jump to the next scheduled event and run it (and any at the same
        instant); False when there is none."""
        t = self.next_event_time()
        if t is None:
            return False
        self.advance_to(t)
        return True

    sleep = advance

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        # Virtual time does not pass by itself: a thread waiting on it can only
        # be woken by a notify. Poll briefly so a test advancing the clock from
        # another thread is noticed without a notify.
        cond.wait(0.005)


def run_until_idle(scheduler, clock: VirtualClock, until: float | None = None) -> None:
    """Drive ``scheduler.run_once`` on virtual time until nothing is left to
    do (no work, no scheduled events) or the clock passes ``until``.

    Between steps, virtual time jumps to the next event (an arrival, a
    cancellation) or to when the scheduler asked to be called again."""
    while until is None or clock.now() < until:
        delay = scheduler.run_once()
        if delay == 0:
            continue
        nxt = clock.next_event_time()
        if delay is None and nxt is None:
            return
        target = clock.now() + delay if delay is not None else cast(float, nxt)  # not both None
        if nxt is not None:
            target = min(target, nxt)
        if until is not None:
            target = min(target, until)
        clock.advance_to(target)
