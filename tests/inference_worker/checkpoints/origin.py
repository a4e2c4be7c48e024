"""The object store as the swarm's origin, for tests and bench/distribution.py:
rclone's S3 server (scripts/test.sh starts it) behind a small pass-through proxy.

Why a proxy: rclone 1.75's S3 server (gofakes3) answers a ranged GET with
``200 OK`` and a Content-Range header instead of ``206 Partial Content`` (fixed
upstream in gofakes3 PR #121, not yet in a released rclone). libtorrent's web-seed
client, like any HTTP/1.1 client, then takes the body for the object from byte 0
and drops the connection. The proxy forwards every request unchanged (the Host
header too, so SigV4 signatures and presigned URLs made for the proxy's address
verify at rclone) and rewrites only that status. It can also cap its total
throughput, as the origin's link, shared by all connections (``rate``, bytes/s),
counts the bytes it served and records each request's method and target.

``outage()`` takes the origin down as an object store in trouble looks: responses
under way are cut, and every request is answered ``503 ServiceUnavailable`` (S3's
XML, no Retry-After) until ``restore()``; ``resumed`` is set when a response body
flows again after that.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import httpx
import uvicorn


class _Link:
    """A link of ``rate`` bytes/s shared by all connections, first come first served."""

    def __init__(self, rate: float):
        self.rate, self.free_at = rate, 0.0

    async def send(self, n: int) -> None:
        now = time.monotonic()
        self.free_at = max(now, self.free_at) + n / self.rate
        await asyncio.sleep(self.free_at - now)


class Origin:
    def __init__(self, upstream: str, *, rate: float = 0):
        self.upstream, self.rate = upstream, rate
        self.bytes_served = 0
        self.requests: list[tuple[str, str]] = []
        self.down = False
        self.refused = 0  # requests answered 503 during outages
        self.restored_at = 0.0  # time.monotonic() of the last restore()
        self.resumed_at = 0.0  # ... and of the first body bytes sent after it
        self.resumed = threading.Event()
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        # loop="asyncio": uvloop's policy would outlive this server in the test process.
        config = uvicorn.Config(self._app, interface="asgi3", ws="none", log_level="warning",
                                lifespan="off", timeout_keep_alive=60, loop="asyncio")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name="s3-origin", daemon=True)

    def __enter__(self) -> Origin:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise TimeoutError("the origin proxy did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc):
        self._server.should_exit = True
        self._thread.join(10)
        self._sock.close()

    def outage(self) -> None:
        self.resumed.clear()
        self.down = True

    def restore(self) -> None:
        self.restored_at = time.monotonic()
        self.down = False

    async def _unavailable(self, send) -> None:
        self.refused += 1
        body = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>ServiceUnavailable</Code>'
                b"<Message>Please reduce your request rate.</Message></Error>")
        await send({"type": "http.response.start", "status": 503,
                    "headers": [(b"content-type", b"application/xml"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def _app(self, scope, receive, send):
        if scope["type"] != "http":
            return
        if not hasattr(self, "_client"):  # one client per event loop (the server's)
            self._client = httpx.AsyncClient(base_url=self.upstream, timeout=None)
            self._link = _Link(self.rate) if self.rate else None

        async def body():
            while True:
                message = await receive()
                if message.get("body"):
                    yield message["body"]
                if not message.get("more_body"):
                    return

        target = scope["raw_path"].decode()
        if scope["query_string"]:
            target += "?" + scope["query_string"].decode()
        self.requests.append((scope["method"], target))
        if self.down:
            return await self._unavailable(send)
        request = self._client.build_request(scope["method"], target, headers=scope["headers"],
                                             content=body())
        response = await self._client.send(request, stream=True)
        status = response.status_code
        if status == 200 and "content-range" in response.headers:
            status = 206

        # uvicorn drops what is sent after the client hung up without saying so: without
        # this, a dropped web seed (libtorrent renews its URL that way) kept streaming
        # into nothing and held the capped link.
        hung_up = asyncio.Event()

        async def watch():
            while (await receive())["type"] != "http.disconnect":
                pass
            hung_up.set()

        watcher = asyncio.ensure_future(watch())
        try:
            await send({"type": "http.response.start", "status": status, "headers": response.headers.raw})
            async for chunk in response.aiter_raw(16 * 1024):
                if hung_up.is_set() or self.down:  # an outage cuts the connection
                    return
                if self._link is not None:
                    await self._link.send(len(chunk))
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                self.bytes_served += len(chunk)
                if self.restored_at and not self.down and not self.resumed.is_set():
                    self.resumed_at = time.monotonic()
                    self.resumed.set()
            await send({"type": "http.response.body", "body": b""})
        except (RuntimeError, OSError):  # the client hung up (libtorrent drops web seeds it is done with)
            pass
        finally:
            watcher.cancel()
            await response.aclose()
