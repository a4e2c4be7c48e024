"""A small HTTP/1.1 client for the upstream engine, on one asyncio event loop.

The upstream engine's cost per request was mostly httpx's (a generic client:
its models, its pool, h11's pure-Python parser). This client does only what
the engine needs, with httptools' C parser (llhttp, as uvicorn uses):

- one origin (the base URL's scheme, host and port); a keep-alive pool of at
  most ``max_connections``, the most recently used first; an idle connection
  is closed after ``idle_s`` (keep it below the server's own keep-alive, 5 s
  in uvicorn, or a reuse races the server's close);
- a request on a reused connection that the server had closed (it closed
  before any byte of the answer came back) is sent again on another;
- connect failures (refused, timed out, TLS refused: nothing was sent) are
  retried ``connect_retries`` times, after 0, 0.5, 1, 2... s (as httpcore);
- ``read_timeout`` is the longest wait for the next bytes of an answer;
- bodies with a Content-Length, chunked, or up to the connection's close.

Everything here runs on the loop's thread (``LoopThread``), except that class.
"""

from __future__ import annotations

import asyncio
import collections
import json
import ssl
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

import httptools

T = TypeVar("T")
BACKOFF_S = 0.5


class HttpError(Exception):
    """A transport failure (the message is for the worker's log)."""


class ConnectFailed(HttpError):
    """No connection after the retries: nothing was sent."""


class ReadTimeout(HttpError):
    pass


class ProtocolError(HttpError):
    """The connection closed mid-answer, or the answer is not HTTP."""


class _Stale(ProtocolError):
    """A reused connection closed before any byte of the answer: the server never read it."""


class Connection(asyncio.Protocol):
    """One connection and the answer being read on it (status, headers, body)."""

    def __init__(self, pool: Pool):
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._counted = True  # in use: its close frees a slot (an idle one's is freed on leaving the pool)
        self.begin(reused=False)

    def begin(self, *, reused: bool) -> None:
        """Ready for the next answer."""
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers: dict[bytes, bytes] = {}
        self.headers_done = self.complete = self.keep_alive = self._to_eof = False
        self.reused, self.received, self.released = reused, False, False
        self._body: list[bytes] = []
        self._error: HttpError | None = None
        self._waiter: asyncio.Future[None] | None = None

    # -- asyncio.Protocol and the parser's callbacks ---------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._error = ProtocolError(f"not an HTTP answer: {exc}")
            self.close()
        self._wake()

    def open(self) -> bool:
        return not self.closed and self.transport is not None and not self.transport.is_closing()

    def eof_received(self) -> None:
        self.closed = True  # not reusable from now (the transport closes itself)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.headers_done and self._to_eof:
            self.complete = True  # a body that ends with the connection
        elif not self.complete and self._error is None:
            stale = self.reused and not self.received
            self._error = (_Stale if stale else ProtocolError)("the server closed the connection")
        self._release_slot()
        self._wake()

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.lower()] = value

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        chunked = b"chunked" in self.headers.get(b"transfer-encoding", b"").lower()
        self._to_eof = not chunked and b"content-length" not in self.headers
        self.headers_done = True

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True
        self.keep_alive = self.parser.should_keep_alive()  # False once the parser moved on

    # -- reading the answer ----------------------------------------------------------

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _timed_out(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(ReadTimeout(f"no bytes for {self.pool.read_timeout} s"))

    async def _wait(self) -> None:
        if self._error is not None:
            raise self._error
        loop = self.pool.loop
        self._waiter = loop.create_future()
        timer = loop.call_later(self.pool.read_timeout, self._timed_out)
        try:
            await self._waiter
        finally:
            timer.cancel()
            self._waiter = None

    async def start(self) -> None:
        """Wait for the status line and headers."""
        while not self.headers_done:
            await self._wait()

    async def next_body(self) -> bytes | None:
        """The body bytes that came since the last call, waiting for some; None at its end."""
        while not self._body:
            if self.complete:
                return None
            await self._wait()
        data = self._body[0] if len(self._body) == 1 else b"".join(self._body)
        self._body.clear()
        return data

    async def read(self, limit: int = 65536) -> bytes:
        """The rest of the body (up to ``limit`` bytes kept), then back to the pool."""
        kept = b""
        while (data := await self.next_body()) is not None:
            kept = (kept + data)[:limit]
        self.release()
        return kept

    async def drain(self) -> None:
        """Read the body to its end, so the connection can go back to the pool."""
        while await self.next_body() is not None:
            pass
        self.release()

    def release(self) -> None:
        """Done with this answer: back to the pool if it was read whole and both ends
        keep the connection, else closed. Once per answer (later calls do nothing)."""
        if self.released:
            return
        if self.complete and self.keep_alive and not self.closed and not self._body:
            self.released = True
            self.pool.put(self)
        else:
            self.close()

    def close(self) -> None:
        self.released = True
        if self.transport is not None:
            self.transport.close()
        self._release_slot()

    def _release_slot(self) -> None:
        if self._counted:
            self._counted = False
            self.pool.forget(self)


class Pool:
    """The connections to one origin: idle ones and a count of all open ones."""

    def __init__(self, loop: asyncio.AbstractEventLoop, host: str, port: int, tls: ssl.SSLContext | None,
                 *, connect_timeout: float, read_timeout: float, connect_retries: int,
                 max_connections: int, idle_s: float):
        self.loop, self.host, self.port, self.tls = loop, host, port, tls
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout
        self.connect_retries, self.max_connections, self.idle_s = connect_retries, max_connections, idle_s
        self.idle: list[Connection] = []
        self.count = 0  # open connections, idle or in use
        self.accepts = 0  # connections opened (for tests and benches)
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._sweep: asyncio.TimerHandle | None = None

    async def acquire(self) -> Connection:
        while True:
            now = time.monotonic()
            while self.idle:
                conn = self.idle.pop()
                if now - conn.idle_since < self.idle_s and conn.open():
                    conn._counted = True
                    conn.begin(reused=True)
                    return conn
                conn.close()
            if self.count < self.max_connections:
                break
            waiter = self.loop.create_future()
            self._waiters.append(waiter)
            try:
                await asyncio.wait_for(waiter, self.connect_timeout)
            except TimeoutError:
                raise HttpError(f"all {self.max_connections} connections stayed busy") from None
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        self.count += 1
        try:
            return await self._connect()
        except BaseException:
            self.count -= 1
            self._wake_one()
            raise

    async def _connect(self) -> Connection:
        last: Exception | None = None
        for attempt in range(self.connect_retries + 1):
            if attempt > 1:
                await asyncio.sleep(BACKOFF_S * 2 ** (attempt - 2))
            try:
                async with asyncio.timeout(self.connect_timeout):
                    _, conn = await self.loop.create_connection(
                        lambda: Connection(self), self.host, self.port, ssl=self.tls,
                        server_hostname=self.host if self.tls else None)
            except (OSError, TimeoutError) as exc:  # ssl.SSLError is an OSError
                last = exc
                continue
            self.accepts += 1
            return conn
        raise ConnectFailed(f"{last!r}") from last

    def put(self, conn: Connection) -> None:
        """An idle connection for the next request (it keeps its place in ``count``)."""
        conn._counted = False
        conn.idle_since = time.monotonic()
        self.idle.append(conn)
        self._wake_one()
        if self._sweep is None:
            self._sweep = self.loop.call_later(self.idle_s, self._expire)

    def forget(self, conn: Connection) -> None:
        """A connection closed: its slot is free."""
        self.count -= 1
        self._wake_one()

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _expire(self) -> None:
        self._sweep = None
        now = time.monotonic()
        for conn in [c for c in self.idle if c.closed or now - c.idle_since >= self.idle_s]:
            self.idle.remove(conn)
            conn._counted = True
            conn.close()
        if self.idle:
            self._sweep = self.loop.call_later(self.idle_s, self._expire)

    def close(self) -> None:
        while self.idle:
            conn = self.idle.pop()
            conn._counted = True
            conn.close()


class Client:
    """Requests to one base URL (http or https), with fixed headers on each."""

    def __init__(self, loop: asyncio.AbstractEventLoop, base_url: str, headers: dict[str, str], **pool: Any):
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("the base URL must be http:// or https:// and name a host")
        tls = ssl.create_default_context() if parts.scheme == "https" else None
        port = parts.port or (443 if tls else 80)
        self.prefix = parts.path.rstrip("/") + "/"
        netloc = parts.netloc.rpartition("@")[2]
        self._headers = f"Host: {netloc}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.pool = Pool(loop, parts.hostname, port, tls, **pool)

    async def request(self, method: str, path: str, body: Any = None, accept: str = "*/*") -> Connection:
        """Send a request (``body``: JSON) and wait for the answer's headers; the caller
        reads the body (``read``, ``drain`` or ``next_body``), then ``release()``s it."""
        head = f"{method} {self.prefix}{path} HTTP/1.1\r\n{self._headers}Accept: {accept}\r\n"
        data = b""
        if body is not None:
            data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
            head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        message = head.encode("latin-1") + b"\r\n" + data
        while True:
            conn = await self.pool.acquire()
            try:
                assert conn.transport is not None
                conn.transport.write(message)
                await conn.start()
                return conn
            except _Stale:
                conn.close()  # the server closed it while idle; try another
            except BaseException:
                conn.close()
                raise

    def close(self) -> None:
        self.pool.close()


class SSEDecoder:
    """Server-sent events from body bytes: the data of each event, its ``data:`` lines
    joined by newlines (other fields and comments are ignored; lines end in LF or CRLF)."""

    def __init__(self) -> None:
        self._rest = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        lines = (self._rest + chunk).split(b"\n")
        self._rest = lines.pop()  # an unfinished line
        events = []
        for line in lines:
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line:  # a blank line ends an event
                if self._data:
                    events.append(self._data[0] if len(self._data) == 1 else b"\n".join(self._data))
                    self._data = []
            elif line.startswith(b"data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(b" ") else value)
        return events


class LoopThread:
    """One event loop (uvloop's if installed) running on a daemon thread."""

    def __init__(self, name: str):
        try:
            import uvloop
            self.loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
        except ImportError:
            self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True, name=name)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coro`` on the loop and wait for its result (from another thread)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self.loop.close()
