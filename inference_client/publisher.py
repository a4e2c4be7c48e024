"""Generation tasks reach the broker from the event loop when it can, else from
one publisher thread per process.

kombu's publish is blocking. A publish that finds the broker connection idle and
healthy runs inline on the event loop: a small write to a socket that is already
open, with no retry, so it cannot wait on a reconnect; the two thread hops it
saves were 0.6 ms of the gateway's overhead at one connection (bench/overhead.py).
Everything else goes to the thread: a publish while another one is in progress
(under load, requests queue there and go out many per wake-up), the first one
(which connects), and every one after a failure until the thread has published
again (the thread retries and reconnects; a request whose inline publish failed
is retried there too).
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable


class Publisher:
    """``publish_batch(items)`` runs on the thread and returns, per item, None
    or the exception that publishing it raised (retrying as the broker's
    policy says). ``publish_now(item)`` publishes one item at once on the
    caller's thread if that is a plain write (True), without retrying, and
    raises what publishing it raised; False: it sent nothing, the thread should."""

    def __init__(self, publish_batch: Callable[[list], list[Exception | None]],
                 publish_now: Callable[[object], bool]):
        self.publish_batch = publish_batch
        self.publish_now = publish_now
        self._pending: deque[tuple[object, asyncio.Future]] = deque()
        self._wake = threading.Event()
        self._busy = threading.Lock()  # held while anyone publishes: one publish at a time
        self._inline = False  # the thread published last time without an error
        self._thread = threading.Thread(target=self._run, name="gateway-publisher", daemon=True)
        self._thread.start()

    async def publish(self, item) -> None:
        """Returns once the broker has it; raises what publishing it raised."""
        if self._inline and not self._pending and self._busy.acquire(blocking=False):
            try:
                if self.publish_now(item):
                    return
            except Exception:  # the connection broke: the thread retries it, reconnecting
                self._inline = False
            finally:
                self._busy.release()
        future = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        self._wake.set()
        await future

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            batch = []
            while self._pending:
                batch.append(self._pending.popleft())
            if not batch:
                continue
            with self._busy:
                try:
                    errors = self.publish_batch([item for item, _ in batch])
                except Exception as exc:  # the whole batch failed (no connection)
                    errors = [exc] * len(batch)
            self._inline = not any(errors)
            outcomes = [(future, error) for (_, future), error in zip(batch, errors, strict=True)]
            by_loop: dict[asyncio.AbstractEventLoop, list] = {}
            for future, error in outcomes:
                by_loop.setdefault(future.get_loop(), []).append((future, error))
            for loop, done in by_loop.items():
                try:
                    loop.call_soon_threadsafe(_resolve, done)
                except RuntimeError:  # that loop closed (a test's); nobody waits there
                    pass


def _resolve(done: list) -> None:
    for future, exc in done:
        if future.done():
            continue
        if exc is None:
            future.set_result(None)
        else:
            future.set_exception(exc)
