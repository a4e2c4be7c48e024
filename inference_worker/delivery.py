"""A device's notifications on a thread of their own, while the device runs.

Between two calls a fixed-batch device waits for its scheduler thread; the
thread used to write the finished call's events (JSON, a Redis pipeline) and
wake the callers' threads there, ~5 ms for a call of 50 requests, and the
device ran 209 ms per 200 ms call at 0.95 of its limit (bench/openloop.py,
a sleep trace). The scheduler now hands each step's outcomes to this thread
and starts the next call; the engine state is still released on its own
thread first. One FIFO: a request's notifications keep their order.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
from collections.abc import Callable

from inference_worker.requests import Outcome, notify_outcomes

log = logging.getLogger(__name__)


class Deliverer:
    def __init__(self, deliver: Callable[[], Callable[[], contextlib.AbstractContextManager]], name: str):
        """``deliver()``: the scheduler's current ``deliver`` (a worker sets it after start)."""
        self._deliver = deliver
        self._queue: collections.deque[list[Outcome]] = collections.deque()
        self._cond = threading.Condition()
        self._closed = False
        self._ended = False  # the thread has returned: what comes later is delivered inline
        self._thread = threading.Thread(target=self._run, name=f"deliver-{name}", daemon=True)
        self._thread.start()

    def put(self, outcomes: list[Outcome]) -> None:
        if not outcomes:
            return
        with self._cond:
            if not self._ended:
                self._queue.append(outcomes)
                self._cond.notify()
                return
        # After close: a scheduler thread that outlived stop()'s timeout (a hung call)
        # still has its callers to tell.
        notify_outcomes(outcomes, self._deliver())

    def close(self, timeout: float | None = None) -> None:
        """Deliver what is queued, then end the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    self._ended = True
                    return
                batches = list(self._queue)
                self._queue.clear()
            outcomes = [outcome for batch in batches for outcome in batch]
            try:
                notify_outcomes(outcomes, self._deliver())
            except Exception:  # a bug: later requests must still hear of their end
                log.exception("%s: delivering %d outcomes failed", self._thread.name, len(outcomes))
