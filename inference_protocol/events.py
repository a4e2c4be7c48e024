"""The event log of a generation, keyed by request id: how tokens travel from
the worker to whoever streams them, and where the final result is kept.

Each generation has an append-only log of events (Redis Streams: a reader that
connects late, or reconnects, reads from the start; pub/sub would lose what it
missed) and a result slot written once (first writer wins), so a redelivered
task never produces a second result. The result is kept a day (idempotent
retries, resumed batches); the log only a minute after the result: a reader
that comes later is answered from the result (``replay``), as one token per
choice, at a tenth of the memory.

Events are dicts: {"type": "token", "attempt", "offset", "text"},
{"type": "done", "result": {...}}, {"type": "error", "code", "message"}.
``offset`` is the number of characters before the token: a redelivered task
replays the same seeded generation, and readers skip what they already have.
"""

from __future__ import annotations

import abc
import asyncio
import concurrent.futures
import functools
import json
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any, cast

import redis
from django.conf import settings

from core.redis import PipelineWriter, get_aredis, get_redis

logger = logging.getLogger(__name__)

# How long results (and logs still running) are kept (seconds): covers idempotent retries.
EVENT_TTL_S = 24 * 3600
# How long a finished generation's log is kept (seconds): its live readers have read it by then.
FINISHED_LOG_TTL_S = 60
# Pub/sub channel of cancel notices (request ids), for low-latency cancellation.
CANCEL_CHANNEL = "gen:cancel"

Event = dict[str, Any]


class EventLog(abc.ABC):
    @abc.abstractmethod
    def append(self, request_id: str, event: Event) -> None: ...

    @abc.abstractmethod
    def finish(self, request_id: str, event: Event) -> bool:
        """Store the terminal event (done/error) unless one exists; append it to
        the log. Returns False when another attempt already finished."""

    def finish_async(self, request_id: str, event: Event) -> concurrent.futures.Future[Any]:
        """``finish`` for a caller that must not wait (a scheduler callback): a
        future of its answer."""
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()
        done.set_result(self.finish(request_id, event))
        return done

    @abc.abstractmethod
    def final(self, request_id: str) -> Event | None:
        """The terminal event, if the generation has finished."""

    async def afinal(self, request_id: str) -> Event | None:
        return self.final(request_id)

    def state(self, request_id: str) -> tuple[Event | None, bool]:
        """(the terminal event or None, whether a cancel was asked), at once."""
        return self.final(request_id), self.cancelled(request_id)

    def states(self, request_ids: list[str]) -> list[tuple[Event | None, bool]]:
        """``state`` of each request."""
        return [self.state(request_id) for request_id in request_ids]

    @abc.abstractmethod
    def cancel(self, request_id: str) -> None:
        """The client went away: ask the worker to drop the request (a mark
        the worker checks, and a notice to the watchers of ``watch_cancels``)."""

    async def acancel(self, request_id: str) -> None:
        await asyncio.to_thread(self.cancel, request_id)

    @abc.abstractmethod
    def cancelled(self, request_id: str) -> bool: ...

    @abc.abstractmethod
    def watch_cancels(self, callback: Callable[[str], object]) -> None:
        """Call ``callback(request_id)`` soon after any cancel (best effort: the
        mark that ``cancelled`` reads stays the truth)."""

    @abc.abstractmethod
    def read(self, request_id: str, after: str, block_ms: int) -> list[tuple[str, Event]]:
        """Events after cursor ``after`` ("0" = from the start), waiting up to
        ``block_ms`` for the first one. Returns (cursor, event) pairs."""

    async def aread(self, request_id: str, after: str, block_ms: int) -> list[tuple[str, Event]]:
        """``read`` for async callers (a thread per blocking read unless overridden)."""
        return await asyncio.to_thread(self.read, request_id, after, block_ms)

    async def astore(self, request_id: str, event: Event) -> bool:
        """``finish`` for a result that did not come from a worker (a cache hit):
        each choice's whole text is logged as one token first, so a reader
        attached later (an idempotent retry) reads it like a generation."""
        return await asyncio.to_thread(self._store, request_id, event)

    def _store(self, request_id: str, event: Event) -> bool:
        if self.final(request_id) is not None:
            return False
        for token in replay(event)[:-1]:
            self.append(request_id, token)
        return self.finish(request_id, event)


class RedisEventLog(EventLog):
    def __init__(self, redis_client: redis.Redis | None = None) -> None:

        self.redis = redis_client or get_redis()

    @staticmethod
    def _stream(request_id: str) -> str:
        return f"gen:{request_id}:events"

    @staticmethod
    def _result(request_id: str) -> str:
        return f"gen:{request_id}:result"

    # Appends and finishes go through one writer per log (one per worker
    # process), many per round trip: a step of a batch of 50 is one round
    # trip, not 100, and the scheduler thread never waits on Redis (it sends
    # a step's events itself, core.redis.PipelineWriter.held). Its FIFO keeps
    # each generation's events in order.

    def append(self, request_id: str, event: Event) -> None:
        stream, raw = self._stream(request_id), json.dumps(event)

        def add(pipe: redis.client.Pipeline) -> None:
            pipe.xadd(stream, {"e": raw})
            pipe.expire(stream, EVENT_TTL_S, nx=True)  # not over a finished log's minute
        self.writer.put(add)

    def finish(self, request_id: str, event: Event) -> bool:
        return bool(self.finish_async(request_id, event).result())

    def finish_async(self, request_id: str, event: Event) -> concurrent.futures.Future[Any]:
        keys, raw = [self._result(request_id), self._stream(request_id)], json.dumps(event)

        def add(pipe: redis.client.Pipeline) -> None:
            # EVAL, not a registered script: redis-py checks a pipeline's scripts
            # with SCRIPT EXISTS first, a second round trip before the terminal
            # event leaves (Redis caches the compiled script by its body's hash).
            pipe.eval(_FINISH, len(keys), *keys, raw, EVENT_TTL_S, FINISHED_LOG_TTL_S)  # type: ignore[arg-type]  # stub: not only str
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.writer.put(add, done)
        return done

    @functools.cached_property
    def writer(self) -> PipelineWriter:
        return PipelineWriter(self.redis, name="event-writer")

    def state(self, request_id: str) -> tuple[Event | None, bool]:
        return self.states([request_id])[0]

    def states(self, request_ids: list[str]) -> list[tuple[Event | None, bool]]:
        """One round trip for all of them."""
        if not request_ids:
            return []
        pipe = self.redis.pipeline(transaction=False)
        for request_id in request_ids:
            pipe.get(self._result(request_id))
            pipe.exists(self._cancel_key(request_id))
        replies = pipe.execute()
        return [((json.loads(raw) if raw else None), bool(cancelled))
                for raw, cancelled in zip(replies[::2], replies[1::2], strict=True)]

    async def astore(self, request_id: str, event: Event) -> bool:
        aredis = get_aredis()
        if not await aredis.set(self._result(request_id), json.dumps(event), nx=True, ex=EVENT_TTL_S):
            return False
        stream = self._stream(request_id)
        async with aredis.pipeline(transaction=False) as pipe:
            for each in replay(event):
                pipe.xadd(stream, {"e": json.dumps(each)})
            pipe.expire(stream, FINISHED_LOG_TTL_S)
            await pipe.execute()
        return True

    @staticmethod
    def _cancel_key(request_id: str) -> str:
        return f"gen:{request_id}:cancel"

    def cancel(self, request_id: str) -> None:
        pipe = self.redis.pipeline(transaction=False)
        pipe.set(self._cancel_key(request_id), "1", ex=EVENT_TTL_S)
        pipe.publish(CANCEL_CHANNEL, request_id)
        pipe.execute()

    async def acancel(self, request_id: str) -> None:
        async with get_aredis().pipeline(transaction=False) as pipe:
            pipe.set(self._cancel_key(request_id), "1", ex=EVENT_TTL_S)
            pipe.publish(CANCEL_CHANNEL, request_id)
            await pipe.execute()

    def cancelled(self, request_id: str) -> bool:
        return bool(self.redis.exists(self._cancel_key(request_id)))

    def watch_cancels(self, callback: Callable[[str], object]) -> None:
        threading.Thread(target=self._watch, args=(callback,), name="cancel-watcher", daemon=True).start()

    def _watch(self, callback: Callable[[str], object]) -> None:
        while True:
            try:
                pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
                pubsub.subscribe(CANCEL_CHANNEL)
                while True:
                    # Bounded waits, not listen(): a quiet channel would hit the
                    # client's socket timeout and look like a lost connection.
                    message = pubsub.get_message(timeout=1.0)
                    if message is not None:
                        callback(message["data"].decode())
            except Exception:  # Redis away: the marks still hold; resubscribe
                logger.warning("cancel watcher lost Redis; resubscribing", exc_info=True)
                time.sleep(1)

    def final(self, request_id: str) -> Event | None:
        # A sync client: its replies are values (redis-py types them as maybe awaitable).
        raw = cast(bytes | None, self.redis.get(self._result(request_id)))
        return json.loads(raw) if raw else None

    async def afinal(self, request_id: str) -> Event | None:
        raw = await get_aredis().get(self._result(request_id))
        return json.loads(raw) if raw else None

    def read(self, request_id: str, after: str, block_ms: int) -> list[tuple[str, Event]]:
        reply = self.redis.xread({self._stream(request_id): after}, block=block_ms or None, count=500)
        return _entries(reply)

    async def aread(self, request_id: str, after: str, block_ms: int) -> list[tuple[str, Event]]:
        # On the event loop: a blocking read per stream must not hold a thread.
        from core.redis import get_aredis

        reply = await get_aredis().xread({self._stream(request_id): after}, block=block_ms or None,
                                         count=500)
        return _entries(reply)


# The terminal event, first writer wins: KEYS result, stream; ARGV event, its ttl, the log's.
_FINISH = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then
  redis.call('XADD', KEYS[2], '*', 'e', ARGV[1])
  redis.call('EXPIRE', KEYS[2], ARGV[3])
  return 1
end
return 0
"""


def replay(final: Event) -> list[Event]:
    """A finished generation's events rebuilt from its terminal event: each
    choice's whole text (and logprobs) as one token at offset 0, so a reader
    that has part of it takes only the rest; then the terminal event."""
    if final["type"] != "done":
        return [final]
    result = final["result"]
    several = "choices" in result
    choices = result.get("choices") or [
        {"index": 0, "text": result["text"], "logprobs": result.get("logprobs")}]
    tokens: list[Event] = []
    for choice in choices:
        if not choice.get("text"):
            continue
        token: Event = {"type": "token", "attempt": 1, "offset": 0, "text": choice["text"]}
        if several:
            token["index"] = choice["index"]
        if choice.get("logprobs") is not None:
            token["logprobs"] = choice["logprobs"]
        tokens.append(token)
    return [*tokens, final]


def _entries(reply: Any) -> list[tuple[str, Event]]:
    return [(cursor.decode() if isinstance(cursor, bytes) else cursor, json.loads(fields[b"e"]))
            for _, entries in reply or () for cursor, fields in entries]


class MemoryEventLog(EventLog):
    """In-process equivalent for the embedded default (one process, no Redis)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._events: dict[str, list[Event]] = defaultdict(list)
        self._final: dict[str, Event] = {}
        self._expires: dict[str, float] = {}
        self._cancelled: set[str] = set()
        self._watchers: list[Callable[[str], object]] = []

    def _expire_locked(self) -> None:
        now = time.monotonic()
        for request_id in [r for r, t in self._expires.items() if t < now]:
            self._events.pop(request_id, None)
            self._final.pop(request_id, None)
            self._cancelled.discard(request_id)
            del self._expires[request_id]

    def append(self, request_id: str, event: Event) -> None:
        with self._cond:
            self._events[request_id].append(event)
            self._expires[request_id] = time.monotonic() + EVENT_TTL_S
            self._cond.notify_all()

    def finish(self, request_id: str, event: Event) -> bool:
        with self._cond:  # the result and its log's last entry at once (the lock is reentrant)
            if request_id in self._final:
                return False
            self._final[request_id] = event
            self._expire_locked()
            self.append(request_id, event)
        return True

    def cancel(self, request_id: str) -> None:
        with self._cond:
            self._cancelled.add(request_id)
            watchers = list(self._watchers)
        for callback in watchers:
            callback(request_id)

    async def acancel(self, request_id: str) -> None:
        self.cancel(request_id)

    def watch_cancels(self, callback: Callable[[str], object]) -> None:
        with self._cond:
            self._watchers.append(callback)

    def cancelled(self, request_id: str) -> bool:
        with self._cond:
            return request_id in self._cancelled

    def final(self, request_id: str) -> Event | None:
        with self._cond:
            return self._final.get(request_id)

    def read(self, request_id: str, after: str, block_ms: int) -> list[tuple[str, Event]]:
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
