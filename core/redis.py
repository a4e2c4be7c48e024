"""The one Redis client factory: a sync client per process, an async client
per event loop (a redis.asyncio client's connections belong to the loop that
opened them; tests and servers may run several loops).

Off in the embedded default (no REDIS_URL): callers check ``enabled()``.
"""

from __future__ import annotations

import asyncio
import functools
import weakref

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
