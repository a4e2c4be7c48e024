"""The recent window of a device's steps: tokens/s, requests/s and the busy
fraction for heartbeats; and the scheduler's running totals (``Tally``)."""

from __future__ import annotations

import collections
from typing import Any


class Tally:
    """What a scheduler did since it started: steps, their batch sizes, and how
    its requests ended (written under the scheduler's lock)."""

    def __init__(self) -> None:
        self.steps = self.last_batch = self.batched = 0
        self.batch_sizes: collections.Counter[int] = collections.Counter()
        self.completed = self.failed = self.cancelled = self.expired = 0

    def step(self, batch_size: int) -> None:
        self.steps += 1
        self.last_batch = batch_size
        self.batched += batch_size
        self.batch_sizes[batch_size] += 1

    def fields(self) -> dict[str, Any]:
        """The totals under their ``SchedulerStats`` names."""
        return {"steps": self.steps, "last_batch_size": self.last_batch,
                "mean_batch_size": self.batched / self.steps if self.steps else 0.0,
                "batch_sizes": dict(self.batch_sizes), "completed": self.completed,
                "failed": self.failed, "cancelled": self.cancelled, "expired": self.expired}


class StepWindow:
    """Steps of the last ``span_s`` seconds: (ended at, tokens, completed, duration)."""

    def __init__(self, span_s: float):
        self.span_s = span_s
        self._steps: collections.deque[tuple[float, int, int, float]] = collections.deque()

    def add(self, now: float, tokens: int, completed: int, duration: float) -> None:
        self._steps.append((now, tokens, completed, duration))
        self._trim(now)

    def _trim(self, now: float) -> None:
        while self._steps and self._steps[0][0] < now - self.span_s:
            self._steps.popleft()

    def rates(self, now: float) -> tuple[float, float, float]:
        """(tokens/s, completed requests/s, busy fraction) over the window."""
        self._trim(now)
        tokens = sum(w[1] for w in self._steps)
        done = sum(w[2] for w in self._steps)
        busy = sum(w[3] for w in self._steps)
        return tokens / self.span_s, done / self.span_s, min(1.0, busy / self.span_s)
