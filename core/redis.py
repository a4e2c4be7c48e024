"""The one Redis client factory: a sync client per process, an async client
per event loop (a redis.asyncio client's connections belong to the loop that
opened them; tests and servers may run several loops).

Off in the embedded default (no REDIS_URL): callers check ``enabled()``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
import threading
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import redis
import redis.asyncio as aioredis
from django.conf import settings
from redis.client import Pipeline
from redis.commands.core import AsyncScript

# Connect fast to a down server (a clear 503, not a hang); reads may block up
# to SOCKET_TIMEOUT_S (XREAD blocks for at most a second at a time).
CONNECT_TIMEOUT_S = 2
SOCKET_TIMEOUT_S = 10
# Every in-flight /v1 request holds one async connection while it waits on its
# event stream: bound them per loop.
MAX_ASYNC_CONNECTIONS = 1024

_async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aioredis.Redis] = (
    weakref.WeakKeyDictionary())
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


_scripts: weakref.WeakKeyDictionary[aioredis.Redis, dict[str, AsyncScript]] = weakref.WeakKeyDictionary()


def script(source: str, client: aioredis.Redis | None = None) -> AsyncScript:
    """A Lua script on the loop's async client (or ``client``), sent by its SHA
    (EVALSHA), and loaded again only when Redis does not know it."""
    client = client or get_aredis()
    by_source = _scripts.setdefault(client, {})
    registered = by_source.get(source)
    if registered is None:
        registered = by_source[source] = client.register_script(source)
    return registered


# Per event loop: the script calls of its current turn, sent together at its end.
_ScriptCall = tuple[str, list[Any], list[Any], "asyncio.Future[Any]"]  # source, keys, args, its reply
_turn_calls: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[_ScriptCall]] = (
    weakref.WeakKeyDictionary())


async def run_script(source: str, keys: list[Any], args: list[Any],
                     client: aioredis.Redis | None = None) -> Any:
    """A Lua script's reply. On the loop's own client, the calls made in one turn
    of the event loop go in one pipeline at its end (EVALSHA each): under load
    many requests reach admission, and their end, in the same turn, and a round
    trip per call was the larger part of a serve process's Redis cost (py-spy)."""
    if client is not None:
        return await script(source, client)(keys=keys, args=args)
    loop = asyncio.get_running_loop()
    calls = _turn_calls.get(loop)
    if calls is None:
        calls = _turn_calls[loop] = []
        loop.call_soon(_end_of_turn, loop)
    future = loop.create_future()
    calls.append((source, keys, args, future))
    return await future


def _end_of_turn(loop: asyncio.AbstractEventLoop) -> None:
    task = loop.create_task(_send_turn(_turn_calls.pop(loop)))
    _sending.add(task)
    task.add_done_callback(_sending.discard)


_sending: set[asyncio.Task[None]] = set()


async def _send_turn(calls: list[_ScriptCall]) -> None:
    client = get_aredis()
    try:
        async with client.pipeline(transaction=False) as pipe:
            for source, keys, args, _ in calls:
                pipe.execute_command("EVALSHA", script(source, client).sha, len(keys), *keys, *args)
            replies = await pipe.execute(raise_on_error=False)
    except Exception as exc:  # the connection: every call of the turn fails alike
        replies = [exc] * len(calls)
    for (source, keys, args, future), reply in zip(calls, replies, strict=True):
        if isinstance(reply, redis.exceptions.NoScriptError):  # Redis restarted: load it, once per script
            try:
                reply = await script(source, client)(keys=keys, args=args)
            except Exception as exc:
                reply = exc
        if future.done():  # its caller went away
            continue
        if isinstance(reply, Exception):
            future.set_exception(reply)
        else:
            future.set_result(reply)


# A held block's thread sends a batch itself only up to this size: a write that
# fits in the socket's buffer returns at once, whatever Redis is doing meanwhile.
INLINE_SEND_MAX_BYTES = 64 * 1024

# Queues its commands on the writer's pipeline.
AddCommands = Callable[[Pipeline], object]
# (commands, [(done, index of the command whose reply it gets)]) of one send.
_Waiters = list[tuple[Future[Any], int]]


class PipelineWriter:
    """Writes for threads that must not wait on Redis (a device's scheduler) and
    for many small writers, as many commands per send as are pending, on a
    connection of its own.

    ``put(add, done)``: ``add(pipe)`` queues its commands on a pipeline;
    ``done`` (a Future), if given, gets the reply of the last one, or the
    exception that the command or the connection raised. Commands are sent in
    ``put`` order.

    The writer thread sends what is pending when a put wakes it, and reads every
    reply. A thread inside ``held()`` (a scheduler delivering one step's
    events) does not wake it: at the block's end that thread sends the block's
    commands itself, one write, and only then wakes the writer thread to read
    the replies. Waking a thread costs about 0.4 ms on a small VM (bench/
    overhead.py), and a terminal event should not wait for it before it leaves.
    That thread never waits on Redis: it sends only while Redis has answered all
    that was sent before, on a connection the server has not closed, a batch of
    at most INLINE_SEND_MAX_BYTES (so the write fits in the socket's buffer);
    otherwise the writer thread sends it (reconnecting), as for any put.
    """

    def __init__(self, client: redis.Redis, name: str):
        self.client = client
        # (add, done), not sent yet
        self._queue: collections.deque[tuple[AddCommands, Future[Any] | None]] = collections.deque()
        # One sender at a time, so that replies come back in the order of _sent.
        self._send_lock = threading.Lock()
        self._connection = client.connection_pool.make_connection()  # connects on its first send
        self._sent: collections.deque[tuple[list[Any], _Waiters]] = collections.deque()
        # A held thread's batch too large to send itself, for the writer.
        self._handed_over: tuple[list[bytes], list[Any], _Waiters] | None = None
        self._answered = False  # the last reply was read: nothing in flight has failed
        self._held = threading.local()
        self._wake = threading.Event()
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def put(self, add: AddCommands, done: Future[Any] | None = None) -> None:
        self._queue.append((add, done))
        self._wake_unless_held()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Puts from this thread inside the block are sent by it at the block's end."""
        depth = getattr(self._held, "depth", 0)
        self._held.depth = depth + 1
        try:
            yield
        finally:
            self._held.depth = depth
            if depth == 0 and self._queue:
                # If the writer thread is sending, it sends these too once it is done.
                if self._answered and not self._sent and self._send_lock.acquire(blocking=False):
                    try:
                        if self._answered and not self._sent:
                            self._send_pending(inline=True)
                    finally:
                        self._send_lock.release()
                self._wake.set()  # to read the replies, or to send

    def _wake_unless_held(self) -> None:
        if not getattr(self._held, "depth", 0):
            self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            try:
                with self._send_lock:
                    self._send_pending(inline=False)
                self._read_replies()
            except Exception:  # a bug: the writes in hand failed; the thread must go on
                logger.exception("the Redis writer failed")

    def _send_pending(self, *, inline: bool) -> None:
        """Send every pending command (the caller holds _send_lock). ``inline``: a
        held block's thread, which leaves a closed connection or a large batch to
        the writer thread."""
        if self._handed_over is not None:
            if inline:
                return
            batch, self._handed_over = self._handed_over, None
            self._send(*batch)
        if not self._sent and self._closed_by_server():
            self._connection.disconnect()  # the next send connects again
            self._answered = False
            if inline:
                return
        ops = []
        while self._queue:
            ops.append(self._queue.popleft())
        if not ops:
            return
        pipe = self.client.pipeline(transaction=False)
        waiters: _Waiters = []
        try:
            for add, done in ops:
                before = len(pipe.command_stack)
                add(pipe)
                if done is not None:
                    if len(pipe.command_stack) == before:
                        raise ValueError(f"{add!r} queued no command for its reply")
                    waiters.append((done, len(pipe.command_stack) - 1))
            commands = list(pipe.command_stack)
            packed = self._connection.pack_commands([args for args, _ in commands])
        except Exception as exc:  # a bug in an add, or a value Redis cannot take: this batch fails
            logger.exception("%d Redis writes could not be encoded", len(ops))
            for _, done in ops:
                if done is not None and not done.done():
                    done.set_exception(exc)
            return
        if inline and sum(len(part) for part in packed) > INLINE_SEND_MAX_BYTES:
            self._handed_over = (packed, commands, waiters)
            return
        self._send(packed, commands, waiters)

    def _closed_by_server(self) -> bool:
        """Whether the idle connection has something to read: the server closed it
        (a restart, a kill, an idle timeout) or sent what nobody asked for."""
        if self._connection._sock is None:  # not connected: the send connects
            return False
        try:
            return bool(self._connection.can_read(timeout=0))
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            return True

    def _send(self, packed: list[bytes], commands: list[Any], waiters: _Waiters) -> None:
        try:
            # No health check: its PING's reply would be read here, out of turn.
            self._connection.send_packed_command(packed, check_health=False)
        except Exception as exc:  # Redis away: waiters get the error, the rest is dropped
            logger.warning("%d queued Redis writes failed: %r", len(commands), exc)
            self._answered = False
            self._connection.disconnect()  # the next send connects again
            for done, _ in waiters:
                done.set_exception(exc)
            return
        self._sent.append((commands, waiters))

    def _read_replies(self) -> None:
        """Read the replies of what was sent, in order (on the writer thread only)."""
        while self._sent:
            commands, waiters = self._sent[0]
            try:
                replies = []
                for args, options in commands:
                    try:
                        replies.append(self.client.parse_response(self._connection, args[0], **options))
                    except redis.ResponseError as exc:  # that command failed, not the connection
                        replies.append(exc)
            except Exception as exc:  # the connection broke: nothing sent on it will answer
                self._fail_sent(exc)
                return
            self._sent.popleft()
            self._answered = True
            for done, index in waiters:
                if isinstance(replies[index], redis.ResponseError):
                    done.set_exception(replies[index])
                else:
                    done.set_result(replies[index])

    def _fail_sent(self, exc: Exception) -> None:
        with self._send_lock:  # no send in between: the next one connects again
            self._answered = False
            self._connection.disconnect()
            failed = list(self._sent)
            self._sent.clear()
        logger.warning("%d sent Redis writes failed: %r", sum(len(c) for c, _ in failed), exc)
        for _, waiters in failed:
            for done, _ in waiters:
                done.set_exception(exc)
