"""The event log of a generation, keyed by request id: how tokens travel from
the worker to whoever streams them, and where the final result is kept.

Each generation has an append-only log of events (Redis Streams: a reader that
connects late, or reconnects, reads from the start; pub/sub would lose what it
missed) and a result slot written once (first writer wins), so a redelivered
task never produces a second result.

Events are dicts: {"type": "token", "attempt", "offset", "text"},
{"type": "done", "result": {...}}, {"type": "error", "code", "message"}.
``offset`` is the number of characters before the token: a redelivered task
replays the same seeded generation, and readers skip what they already have.
"""

from __future__ import annotations

import abc
import asyncio
import json
import threading
import time
from collections import defaultdict

from django.conf import settings

from core.redis import get_aredis, get_redis

# How long logs and results are kept (seconds): covers idempotent retries.
EVENT_TTL_S = 24 * 3600


class EventLog(abc.ABC):
    @abc.abstractmethod
    def append(self, request_id: str, event: dict) -> None: ...

    @abc.abstractmethod
    def finish(self, request_id: str, event: dict) -> bool:
        """Store the terminal event (done/error) unless one exists; append it to
        the log. Returns False when another attempt already finished."""

    @abc.abstractmethod
    def final(self, request_id: str) -> dict | None:
        """The terminal event, if the generation has finished."""

    @abc.abstractmethod
    def cancel(self, request_id: str) -> None:
        """The client went away: ask the worker to drop the request."""

    @abc.abstractmethod
    def cancelled(self, request_id: str) -> bool: ...

    @abc.abstractmethod
    def read(self, request_id: str, after: str, block_ms: int) -> list[tuple[str, dict]]:
        """Events after cursor ``after`` ("0" = from the start), waiting up to
        ``block_ms`` for the first one. Returns (cursor, event) pairs."""

    async def aread(self, request_id: str, after: str, block_ms: int) -> list[tuple[str, dict]]:
        """``read`` for async callers (a thread per blocking read unless overridden)."""
        return await asyncio.to_thread(self.read, request_id, after, block_ms)

    async def astore(self, request_id: str, event: dict) -> bool:
        """``finish`` for a result that did not come from a worker (a cache hit):
        a done event's whole text is logged as one token first, so a reader
        attached later (an idempotent retry) reads it like a generation."""
        return await asyncio.to_thread(self._store, request_id, event)

    def _store(self, request_id: str, event: dict) -> bool:
        if self.final(request_id) is not None:
            return False
        if event["type"] == "done" and event["result"]["text"]:
            self.append(request_id, _whole_text(event))
        return self.finish(request_id, event)


class RedisEventLog(EventLog):
    def __init__(self, redis_client=None):

        self.redis = redis_client or get_redis()

    @staticmethod
    def _stream(request_id: str) -> str:
        return f"gen:{request_id}:events"

    @staticmethod
    def _result(request_id: str) -> str:
        return f"gen:{request_id}:result"

    def append(self, request_id, event):
        pipe = self.redis.pipeline(transaction=False)
        pipe.xadd(self._stream(request_id), {"e": json.dumps(event)})
        pipe.expire(self._stream(request_id), EVENT_TTL_S)
        pipe.execute()

    def finish(self, request_id, event):
        if not self.redis.set(self._result(request_id), json.dumps(event), nx=True, ex=EVENT_TTL_S):
            return False
        self.append(request_id, event)
        return True

    async def astore(self, request_id, event):
        redis = get_aredis()
        if not await redis.set(self._result(request_id), json.dumps(event), nx=True, ex=EVENT_TTL_S):
            return False
        stream = self._stream(request_id)
        async with redis.pipeline(transaction=False) as pipe:
            if event["type"] == "done" and event["result"]["text"]:
                pipe.xadd(stream, {"e": json.dumps(_whole_text(event))})
            pipe.xadd(stream, {"e": json.dumps(event)})
            pipe.expire(stream, EVENT_TTL_S)
            await pipe.execute()
        return True

    def cancel(self, request_id):
        self.redis.set(f"gen:{request_id}:cancel", "1", ex=EVENT_TTL_S)

    def cancelled(self, request_id):
        return bool(self.redis.exists(f"gen:{request_id}:cancel"))

    def final(self, request_id):
        raw = self.redis.get(self._result(request_id))
        return json.loads(raw) if raw else None

    def read(self, request_id, after, block_ms):
        reply = self.redis.xread({self._stream(request_id): after}, block=block_ms or None, count=500)
        return _entries(reply)

    async def aread(self, request_id, after, block_ms):
        # On the event loop: a blocking read per stream must not hold a thread.
        from core.redis import get_aredis

        reply = await get_aredis().xread({self._stream(request_id): after}, block=block_ms or None,
                                         count=500)
        return _entries(reply)


def _whole_text(done: dict) -> dict:
    return {"type": "token", "attempt": 1, "offset": 0, "text": done["result"]["text"]}


def _entries(reply) -> list[tuple[str, dict]]:
    return [(cursor.decode() if isinstance(cursor, bytes) else cursor, json.loads(fields[b"e"]))
            for _, entries in reply or () for cursor, fields in entries]


class MemoryEventLog(EventLog):
    """In-process equivalent for the embedded default (one process, no Redis)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._events: dict[str, list[dict]] = defaultdict(list)
        self._final: dict[str, dict] = {}
        self._expires: dict[str, float] = {}
        self._cancelled: set[str] = set()

    def _expire_locked(self):
        now = time.monotonic()
        for request_id in [r for r, t in self._expires.items() if t < now]:
            self._events.pop(request_id, None)
            self._final.pop(request_id, None)
            self._cancelled.discard(request_id)
            del self._expires[request_id]

    def append(self, request_id, event):
        with self._cond:
            self._events[request_id].append(event)
            self._expires[request_id] = time.monotonic() + EVENT_TTL_S
            self._cond.notify_all()

    def finish(self, request_id, event):
        with self._cond:
            if request_id in self._final:
                return False
            self._final[request_id] = event
            self._expire_locked()
        self.append(request_id, event)
        return True

    def cancel(self, request_id):
        with self._cond:
            self._cancelled.add(request_id)

    def cancelled(self, request_id):
        with self._cond:
            return request_id in self._cancelled

    def final(self, request_id):
        with self._cond:
            return self._final.get(request_id)

    def read(self, request_id, after, block_ms):
        start = int(after)
        deadline = time.monotonic() + block_ms / 1000
        with self._cond:
            while len(self._events.get(request_id, ())) <= start:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                self._cond.wait(remaining)
            events = self._events[request_id][start:]
        return [(str(start + i + 1), e) for i, e in enumerate(events)]


_memory_log = MemoryEventLog()


def get_event_log() -> EventLog:
    return RedisEventLog() if settings.REDIS_URL else _memory_log
