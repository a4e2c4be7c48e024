"""An async PostgreSQL connection pool per event loop, for hot paths that must not
hop to a worker thread (a chat send: the thread hop and the ORM cost more CPU than
the statement itself).

Same database and adapters as Django's connection; autocommit, so one statement is
one transaction. Only on PostgreSQL: callers check ``enabled()`` and keep their ORM
path for SQLite. A pool's connections belong to the loop that opened it (tests run
several loops): ``close()`` closes the current loop's pool.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connections

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg.rows import TupleRow
    from psycopg_pool import AsyncConnectionPool

    Pool = AsyncConnectionPool[AsyncConnection[TupleRow]]

_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Pool] = weakref.WeakKeyDictionary()


def enabled() -> bool:
    return connections["default"].vendor == "postgresql"


def _kwargs() -> dict[str, Any]:
    params = dict(connections["default"].get_connection_params())
    params.pop("cursor_factory", None)  # Django's sync cursor class
    # Server-side prepared statements for the few hot statements sent here
    # (Django turns them off for its own connections).
    params.pop("prepare_threshold", None)
    return {**params, "autocommit": True}


async def pool() -> Pool:
    from psycopg_pool import AsyncConnectionPool

    loop = asyncio.get_running_loop()
    found = _pools.get(loop)
    if found is None:
        found = AsyncConnectionPool(kwargs=_kwargs(), min_size=1, max_size=settings.DB_ASYNC_POOL_MAX_SIZE,
                                    open=False, timeout=5, name="promptyard-async")
        _pools[loop] = found
        await found.open()
    return found


async def fetchone(sql: str, params: dict[str, Any] | tuple[Any, ...]) -> tuple[Any, ...] | None:
    async with (await pool()).connection() as conn:
        cursor = await conn.execute(sql, params)
        return await cursor.fetchone()


async def execute(sql: str, params: dict[str, Any] | tuple[Any, ...]) -> int:
    """Runs one statement; returns its row count."""
    async with (await pool()).connection() as conn:
        cursor = await conn.execute(sql, params)
        return cursor.rowcount


async def close() -> None:
    found = _pools.pop(asyncio.get_running_loop(), None)
    if found is not None:
        await found.close()
