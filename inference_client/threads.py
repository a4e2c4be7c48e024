"""A small fixed thread pool for the database work of async views.

Django's ASGI handler would run each request's sync code on a new thread;
database work here runs on a fixed pool instead, and each call hands its
connection back to the process's connection pool when it ends, so these
threads never hold connections between calls. The /v1 hot path makes no
database call per request (cached keys, usage written in batches), so the
pool serves cache misses, batched usage writes and saved-prompt runs.
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor

from django.db import connections

DB_THREADS = 4
_db = ThreadPoolExecutor(max_workers=DB_THREADS, thread_name_prefix="gateway-db")


def _with_connection(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    finally:
        connections.close_all()  # back to the pool, as at the end of a request


async def run_db(fn, *args, **kwargs):
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_db, functools.partial(_with_connection, fn, *args, **kwargs))
