"""Usage records: written once per request that reached generation or the
cache, without a database round trip on the request's path.

With Redis, a record is appended to the stream USAGE_STREAM by the same atomic
script that settles the request's token charge (admission.settle), so a
charge is never corrected without its record. Each gateway process runs one
``UsageWriter`` task that reads the stream in a consumer group and stores
records in batches (one INSERT of up to BATCH rows), then acknowledges them:
a record is in PostgreSQL about USAGE_FLUSH_INTERVAL_MS later, and one whose writer
died before acknowledging is claimed by another writer after CLAIM_IDLE_MS.
The writer stores what it read once BATCH records wait or the first of them
was read USAGE_FLUSH_INTERVAL_MS ago, reading the rest of a partial batch in
one read when it is due: at low load a write per request (a database call and
four Redis round trips on the event loop) ran as each request ended, beside
the next one, and slowed it (bench/overhead.py), and so did a read per record;
under load batches fill and nothing waits.
Without Redis (the embedded default) the record is inserted directly.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import socket
import weakref
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from accounts.models import ApiKey
from core.redis import get_aredis
from generations.store import generations_store
from inference_client import generation_log
from inference_client.models import UsageRecord
from inference_client.threads import run_db

logger = logging.getLogger(__name__)

USAGE_STREAM = "usage:records"
GROUP = "usage-writers"
BATCH = 500
CLAIM_IDLE_MS = 30_000
_CONSUMER = f"{socket.gethostname()}:{os.getpid()}"
_writers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # loop -> task


def record_json(**fields) -> str:
    """The stream form of a record: UsageRecord's field names (foreign keys by id),
    and `generation`, the log entry of a run of a saved version (generation_log)."""
    return json.dumps(fields)


def _store(raws: list[str]) -> None:
    records = [json.loads(raw) for raw in raws]
    logged = [(r, r.pop("generation")) for r in records if "generation" in r]
    _insert(records)
    _touch_keys(records)
    if logged:
        generations_store(logged)


def _insert(records: list[dict[str, Any]]) -> None:
    """One INSERT; request_id is unique, so a record claimed twice is stored once."""
    if connection.vendor != "postgresql":
        UsageRecord.objects.bulk_create([UsageRecord(**r) for r in records], ignore_conflicts=True)
        return
    # PostgreSQL takes the batch as one JSON parameter: 500 model instances, and
    # binding each of their fields, cost the writer 6x the CPU (72-91 us a record
    # against 12-14). A record names every column but `id` and `created_at`
    # (stages/record.py).
    now = timezone.now().isoformat()
    rows = [{**r, "created_at": now} for r in records]
    with connection.cursor() as cursor:
        cursor.execute(_insert_sql(), [json.dumps(rows)])


@functools.cache
def _insert_sql() -> str:
    quote = connection.ops.quote_name
    table = quote(UsageRecord._meta.db_table)
    columns = ", ".join(quote(f.column) for f in UsageRecord._meta.concrete_fields if not f.primary_key)
    return (f"INSERT INTO {table} ({columns}) SELECT {columns}"
            f" FROM json_populate_recordset(NULL::{table}, %s) ON CONFLICT (request_id) DO NOTHING")


def _touch_keys(records: list[dict[str, Any]]) -> None:
    """last_used_at of the keys in the batch (cached lookups skip the database)."""
    key_ids = {r["api_key_id"] for r in records if r.get("api_key_id") is not None}
    if key_ids:
        ApiKey.objects.filter(pk__in=key_ids).update(last_used_at=timezone.now())


async def store_now(**fields) -> None:
    """Embedded default: no stream, one INSERT."""
    await run_db(_store, [record_json(**fields)])


def ensure_writer() -> None:
    """Start this event loop's writer if it is not running."""
    loop = asyncio.get_running_loop()
    task = _writers.get(loop)
    if task is None or task.done():
        _writers[loop] = loop.create_task(UsageWriter().run(), name="usage-writer")


class UsageWriter:
    async def run(self) -> None:
        redis = get_aredis()
        while True:
            try:
                await self._create_group(redis)
                await self._drain(redis)
            except asyncio.CancelledError:
                raise
            except Exception:  # Redis or the database away: retry, records wait in the stream
                logger.exception("usage writer failed; retrying in 1 s")
                await asyncio.sleep(1)

    @staticmethod
    async def _create_group(redis) -> None:
        try:
            await redis.xgroup_create(USAGE_STREAM, GROUP, id="0", mkstream=True)
        except Exception as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def _drain(self, redis) -> None:
        claim_from, claim_at = "0-0", 0.0
        loop = asyncio.get_running_loop()
        pending: list[tuple[str, dict[str, Any]]] = []  # read, not yet stored
        first_read_at = 0.0
        interval = settings.USAGE_FLUSH_INTERVAL_MS / 1000
        while True:
            if loop.time() >= claim_at:  # records of writers that died before acknowledging
                claim_from, claimed, _ = await redis.xautoclaim(
                    USAGE_STREAM, GROUP, _CONSUMER, min_idle_time=CLAIM_IDLE_MS, start_id=claim_from,
                    count=BATCH)
                if claimed:
                    await self._store(redis, claimed)
                else:
                    claim_at = loop.time() + CLAIM_IDLE_MS / 1000 / 4
            if pending:
                # The rest of a partial batch in one read once it is due, not a read as
                # each record comes: that woke this loop once per request, beside the
                # next one (bench/e2e.py at one connection). A full read stores at once.
                await asyncio.sleep(max(0.0, first_read_at + interval - loop.time()))
                block = None
            else:
                block = 1000  # the first record, or around again for the claims
            reply = await redis.xreadgroup(GROUP, _CONSUMER, {USAGE_STREAM: ">"},
                                           count=BATCH - len(pending), block=block)
            entries = [entry for _, batch in reply or () for entry in batch]
            if not pending:  # a whole batch at the first read: records wait in the stream
                generation_log.set_behind(len(entries) >= BATCH)
            if entries and not pending:
                first_read_at = loop.time()
            pending += entries
            if pending and (len(pending) >= BATCH or loop.time() >= first_read_at + interval):
                await self._store(redis, pending)
                pending = []

    @staticmethod
    async def _store(redis, entries) -> None:
        ids = [entry_id for entry_id, _ in entries]
        raws = [fields[b"r"].decode() for _, fields in entries if fields]
        if raws:
            await run_db(_store, raws)
        await redis.xack(USAGE_STREAM, GROUP, *ids)
        await redis.xdel(USAGE_STREAM, *ids)
