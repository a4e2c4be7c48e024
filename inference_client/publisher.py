"""Generation tasks reach the broker from the event loop when it can, else from
one publisher thread per process; those published in the same turn of the event
loop go together (the backend sends them as one message per queue).

kombu's publish is blocking. Publishes gathered in a turn of the loop are sent at
the end of it (``call_soon``): under load many requests reach this stage in the
same turn, and one message for all of them costs the gateway, the broker and
the worker about what one request did (bench/ceiling.py). When the broker
connection is idle and healthy they are sent inline on the event loop: small
writes to a socket that is already open, with no retry, so they cannot wait on a
reconnect; the two thread hops this saves were 0.6 ms of the gateway's overhead
at one connection (bench/overhead.py). Everything else goes to the thread: a
publish while another one is in progress, the first one (which connects), and
every one after a failure until the thread has published again (the thread
retries and reconnects; requests whose inline publish failed are retried there too).

A publish is a write without the broker's confirm (a confirm per message would
put a broker round trip, and a disk sync for persistent messages, on every
request's path). What was written to a connection that broke before the broker
read it is lost without an error: a cut link, a broker that crashed. So each
write is settled SETTLE_S later, or at once when a publish on the same process
fails: if its connection is still open the broker had all that time to read it;
if not, ``on_lost`` gets the requests, which the backend ends with a retryable
error instead of leaving them to wait for a worker until their timeout.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable

logger = logging.getLogger(__name__)

# Seconds after a write when its connection being still open counts as the broker having it.
SETTLE_S = 0.5


class Publisher:
    """``publish_batch(items)`` runs on the thread and returns the connection it
    wrote on and, per item, None or the exception that publishing it raised
    (retrying as the broker's policy says). ``publish_now(items)`` publishes at
    once on the caller's thread if that is a plain write, without retrying, and
    returns the connection, or raises what publishing raised; None: it sent
    nothing, the thread should. ``alive(connection)``: whether it is still open;
    ``on_lost(items)`` (on the thread): items written to a connection that broke
    before they settled."""

    def __init__(self, publish_batch: Callable[[list], tuple[Hashable, list[Exception | None]]],
                 publish_now: Callable[[list], Hashable | None], alive: Callable[[Hashable], bool],
                 on_lost: Callable[[list], None]):
        self.publish_batch = publish_batch
        self.publish_now = publish_now
        self.alive = alive
        self.on_lost = on_lost
        self._pending: deque[tuple[object, asyncio.Future]] = deque()
        # Written, not yet settled: (when, connection, items), oldest first.
        self._unsettled: deque[tuple[float, Hashable, list]] = deque()
        self._settle_all = False  # a publish failed: settle everything written so far now
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
            items = [item for item, _ in batch]
            try:
                connection = self.publish_now(items)
                if connection is not None:
                    self._written(connection, items)
                    _resolve([(future, None) for _, future in batch])
                    return
            except Exception:  # the connection broke: the thread retries them, reconnecting
                self._inline = False
                self._settle_all = True
            finally:
                self._busy.release()
        self._pending.extend(batch)
        self._wake.set()

    def _written(self, connection: Hashable, items: list) -> None:
        idle = not self._unsettled  # the thread may be waiting without a timeout: wake it
        self._unsettled.append((time.monotonic(), connection, items))
        if idle:
            self._wake.set()

    def _run(self) -> None:
        while True:
            oldest = self._unsettled[0][0] if self._unsettled else None
            self._wake.wait(None if oldest is None else max(0.0, oldest + SETTLE_S - time.monotonic()))
            self._wake.clear()
            self._settle()
            batch = []
            while self._pending:
                batch.append(self._pending.popleft())
            if batch:
                self._publish(batch)

    def _settle(self) -> None:
        """Settle the writes SETTLE_S old (all of them after a failure): those
        whose connection closed meanwhile are lost."""
        settle_all, self._settle_all = self._settle_all, False
        now, verdicts, lost = time.monotonic(), {}, []
        while self._unsettled and (settle_all or self._unsettled[0][0] + SETTLE_S <= now):
            _, connection, items = self._unsettled.popleft()
            if connection not in verdicts:
                verdicts[connection] = self.alive(connection)
            if not verdicts[connection]:
                lost += items
        if lost:
            try:
                self.on_lost(lost)
            except Exception:
                logger.exception("could not end %d request(s) lost with their connection", len(lost))

    def _publish(self, batch: list[tuple[object, asyncio.Future]]) -> None:
        items = [item for item, _ in batch]
        with self._busy:
            try:
                connection, errors = self.publish_batch(items)
            except Exception as exc:  # the whole batch failed (no connection)
                connection, errors = None, [exc] * len(batch)
        if connection is not None:
            sent = [item for item, error in zip(items, errors, strict=True) if error is None]
            self._written(connection, sent)
        if any(errors):
            self._settle_all = True
            self._wake.set()
        self._inline = not any(errors)
        by_loop: dict[asyncio.AbstractEventLoop, list] = {}
        for (_, future), error in zip(batch, errors, strict=True):
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
