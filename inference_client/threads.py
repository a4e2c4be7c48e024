"""Small fixed thread pools for the blocking work of async views.

Django's ASGI handler runs each request's thread-sensitive sync code on a new
thread, and every such thread opens (and, with CONN_MAX_AGE, keeps) its own
database connection: a burst of a few hundred requests exhausts PostgreSQL's
connection slots. Database work here runs on a fixed pool instead, so the
gateway holds at most DB_THREADS connections; broker publishes get their own.
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor

from django.db import close_old_connections

DB_THREADS = 4
PUBLISH_THREADS = 8
_db = ThreadPoolExecutor(max_workers=DB_THREADS, thread_name_prefix="gateway-db")
_publish = ThreadPoolExecutor(max_workers=PUBLISH_THREADS, thread_name_prefix="gateway-publish")


def _with_fresh_connection(fn, *args, **kwargs):
    close_old_connections()  # drop a connection the database closed, as a request would
    return fn(*args, **kwargs)


async def run_db(fn, *args, **kwargs):
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_db, functools.partial(_with_fresh_connection, fn, *args, **kwargs))


async def run_publish(fn, *args, **kwargs):
    return await asyncio.get_running_loop().run_in_executor(_publish, functools.partial(fn, *args, **kwargs))


def close_db_connections() -> None:
    """Close the pool threads' connections (tests drop their database after)."""
    import threading

    from django.db import connections

    barrier = threading.Barrier(DB_THREADS)

    def close():
        connections.close_all()
        barrier.wait(timeout=5)  # hold this thread so each thread runs one close

    for future in [_db.submit(close) for _ in range(DB_THREADS)]:
        future.result()
