"""Generation tasks reach the broker from the event loop when it can, else from
one publisher thread per process; those published in the same turn of the event
loop go together (the backend sends them as one message per queue).

kombu's publish is blocking. Publishes gathered in a turn of the loop are sent at
the end of it (``call_soon``): under load many requests reach this stage in the
same turn, and one message for all of them costs the gateway, the broker and
the worker about what one request did (bench/gateway.py). When the broker
connection is idle and healthy they are sent inline on the event loop: small
writes to a socket that is already open, with no retry, so they cannot wait on a
reconnect; the two thread hops this saves were 0.6 ms of the gateway's overhead
at one connection (bench/overhead.py). Everything else goes to the thread: a
publish while another one is in progress, the first one (which connects), and
every one after a failure until the thread has published again (the thread
retries and reconnects; requests whose inline publish failed are retried there too).
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
                 publish_now: Callable[[list], bool]):
        self.publish_batch = publish_batch
        self.publish_now = publish_now
        self._pending: deque[tuple[object, asyncio.Future]] = deque()
        # Per event loop: what this turn of it published so far (sent at its end).
        self._gathering: dict[asyncio.AbstractEventLoop, list[tuple[object, asyncio.Future]]] = {}
        self._wake = threading.Event()
        self._busy = threading.Lock()  # held while anyone publishes: one publish at a time
        self._inline = False  # the thread published last time without an error
        self._thread = threading.Thread(target=self._run, name="gateway-publisher", daemon=True)
        self._thread.start()

    async def publish(self, item) -> None:
        """Returns once the broker has it; raises what publishing it raised."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        gathering = self._gathering.get(loop)
        if gathering is None:
            gathering = self._gathering[loop] = []
            loop.call_soon(self._flush, loop)
        gathering.append((item, future))
        await future

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        """The end of a turn of ``loop``: send what it gathered, inline if it can."""
        batch = self._gathering.pop(loop)
        if self._inline and not self._pending and self._busy.acquire(blocking=False):
            try:
                if self.publish_now([item for item, _ in batch]):
                    _resolve([(future, None) for _, future in batch])
                    return
            except Exception:  # the connection broke: the thread retries them, reconnecting
                self._inline = False
            finally:
                self._busy.release()
        self._pending.extend(batch)
        self._wake.set()

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
