"""Generation tasks reach the broker from one publisher thread per process.

kombu's publish is blocking, so it cannot run on the event loop; a thread hop
per request (a pool of them) made requests queue for threads under load. Here
requests wait on a future while one thread publishes whatever is pending in a
loop, over one producer, and wakes the event loop once per batch.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable


class Publisher:
    """``publish_batch(items)`` runs on the thread and returns, per item, None
    or the exception that publishing it raised."""

    def __init__(self, publish_batch: Callable[[list], list[Exception | None]]):
        self.publish_batch = publish_batch
        self._pending: deque[tuple[object, asyncio.Future]] = deque()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gateway-publisher", daemon=True)
        self._thread.start()

    async def publish(self, item) -> None:
        """Returns once the broker has it; raises what publishing it raised."""
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
            try:
                errors = self.publish_batch([item for item, _ in batch])
            except Exception as exc:  # the whole batch failed (no connection)
                errors = [exc] * len(batch)
            outcomes = [(future, exc) for (_, future), exc in zip(batch, errors, strict=True)]
            by_loop: dict[asyncio.AbstractEventLoop, list] = {}
            for future, exc in outcomes:
                by_loop.setdefault(future.get_loop(), []).append((future, exc))
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

