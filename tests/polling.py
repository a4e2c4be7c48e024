"""Waiting for a condition in tests: poll it with a deadline, never sleep a guess."""

import time


def wait_for(predicate, timeout: float = 30, interval: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
