"""The one Redis client factory: a sync client per process, an async client
per event loop (a redis.asyncio client's connections belong to the loop that
opened them; tests and servers may run several loops).

Off in the embedded default (no REDIS_URL): callers check ``enabled()``.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future

import redis
import redis.asyncio as aioredis
from django.conf import settings

# Connect fast to a down server (a clear 503, not a hang); reads may block up
# to SOCKET_TIMEOUT_S (XREAD blocks for at most a second at a time).
CONNECT_TIMEOUT_S = 2
SOCKET_TIMEOUT_S = 10
# Every in-flight /v1 request holds one async connection while it waits on its
# event stream: bound them per loop.
MAX_ASYNC_CONNECTIONS = 1024

_async_clients: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
logger = logging.getLogger(__name__)


def enabled() -> bool:
    return bool(settings.REDIS_URL)


@functools.cache
def get_redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=CONNECT_TIMEOUT_S,
                                socket_timeout=SOCKET_TIMEOUT_S)


def get_aredis() -> aioredis.Redis:
    loop = asyncio.get_running_loop()
    client = _async_clients.get(loop)
    if client is None:
        client = _async_clients[loop] = aioredis.Redis.from_url(
            settings.REDIS_URL, socket_connect_timeout=CONNECT_TIMEOUT_S,
            socket_timeout=SOCKET_TIMEOUT_S, max_connections=MAX_ASYNC_CONNECTIONS)
    return client


_scripts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # client -> {source: script}


def script(source: str, client: aioredis.Redis | None = None):
    """A Lua script on the loop's async client (or ``client``), sent by its SHA
    (EVALSHA), and loaded again only when Redis does not know it."""
    client = client or get_aredis()
    by_source = _scripts.setdefault(client, {})
    registered = by_source.get(source)
    if registered is None:
        registered = by_source[source] = client.register_script(source)
    return registered


class PipelineWriter:
    """One thread that sends whatever commands are pending, as many per round
    trip as there are (one pipeline), so that threads which must not wait on
    Redis (a device's scheduler) and many small writers share few round trips.

    ``put(add, done)``: ``add(pipe)`` queues its commands on the pipeline and
    returns how many it queued; ``done`` (a Future), if given, gets the reply
    of the last one, or the exception when the round trip failed. Commands
    run in ``put`` order. ``put_latest(key, add)`` keeps only the newest
    pending ``add`` per key (a state that is overwritten anyway).
    """

    def __init__(self, client: redis.Redis, name: str):
        self.client = client
        self._queue: collections.deque = collections.deque()
        self._latest: dict[str, Callable] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def put(self, add: Callable, done: Future | None = None) -> None:
        self._queue.append((add, done))
        self._wake.set()

    def put_latest(self, key: str, add: Callable) -> None:
        with self._lock:
            self._latest[key] = add
        self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            ops = []
            while self._queue:
                ops.append(self._queue.popleft())
            with self._lock:
                latest, self._latest = list(self._latest.values()), {}
            ops += [(add, None) for add in latest]
            if ops:
                self._send(ops)

    def _send(self, ops: list) -> None:
        pipe = self.client.pipeline(transaction=False)
        counts = [add(pipe) for add, _ in ops]
        try:
            replies = pipe.execute()
        except Exception as exc:  # Redis away: waiters get the error, the rest is dropped
            logger.warning("%d queued Redis writes failed: %r", len(ops), exc)
            for _, done in ops:
                if done is not None:
                    done.set_exception(exc)
            return
        at = 0
        for (_, done), count in zip(ops, counts, strict=True):
            at += count
            if done is not None:
                done.set_result(replies[at - 1])
