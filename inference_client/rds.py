"""Async Redis for the gateway: one client per event loop (a client's connections
belong to the loop that opened them; tests and servers may run several loops)."""

from __future__ import annotations

import asyncio
import weakref

import redis.asyncio as aioredis
from django.conf import settings

_clients: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def enabled() -> bool:
    return bool(settings.REDIS_URL)


def get_aredis() -> aioredis.Redis:
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None:
        client = _clients[loop] = aioredis.Redis.from_url(
            settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=10, max_connections=512)
    return client
