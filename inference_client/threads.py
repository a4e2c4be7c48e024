"""Small fixed thread pools for the blocking work of async views.

Django's ASGI handler runs each request's thread-sensitive sync code on a new
thread; database work here runs on a fixed pool instead, and each call hands
its connection back to the process's connection pool when it ends, so these
threads never hold connections between calls. Broker publishes get their own
threads.
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor

from django.db import connections

DB_THREADS = 4
PUBLISH_THREADS = 8
_db = ThreadPoolExecutor(max_workers=DB_THREADS, thread_name_prefix="gateway-db")
_publish = ThreadPoolExecutor(max_workers=PUBLISH_THREADS, thread_name_prefix="gateway-publish")


def _with_connection(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    finally:
        connections.close_all()  # back to the pool, as at the end of a request


async def run_db(fn, *args, **kwargs):
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_db, functools.partial(_with_connection, fn, *args, **kwargs))


async def run_publish(fn, *args, **kwargs):
    return await asyncio.get_running_loop().run_in_executor(_publish, functools.partial(fn, *args, **kwargs))
