"""The app under uvicorn on a free port, against the test database, restartable;
and a websocket chat client that reconnects and resends like a real one."""

import asyncio
import json
import os
import random
import threading
import time
from collections import deque
from contextlib import ExitStack

from django.conf import settings
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.livesubprocess import SERVICE_VARS, free_port, running_server


def test_database_url() -> str:
    db = settings.DATABASES["default"]
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


class LiveServer:
    """uvicorn serving config.asgi with the test run's PostgreSQL and Redis."""

    def __init__(self, **env: str):
        self.port = free_port()
        self.env = {k: v for k, v in os.environ.items()}
        self.env.update(DATABASE_URL=test_database_url(), **env)
        assert all(k in os.environ for k in ("REDIS_URL",)), SERVICE_VARS
        self._stack: ExitStack | None = None
        self.restarts = 0
        self.lock = threading.Lock()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/chat/"

    def start(self) -> None:
        args = ["-m", "uvicorn", "config.asgi:application", "--port", str(self.port), "--lifespan", "off",
                "--log-level", "warning", "--ws", "websockets"]
        self._stack = ExitStack()
        self.proc = self._stack.enter_context(running_server(args, self.env, self.port)).proc

    def kill(self) -> None:
        """No graceful shutdown: in-flight sends and live pushes are cut mid-way."""
        self.proc.kill()
        self.proc.wait()
        self._stack.close()

    def restart(self) -> None:
        self.kill()
        self.start()
        self.restarts += 1

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        if self._stack:
            self._stack.close()


class Stalled(Exception):
    pass


class ChatClient:
    """Sends its outbox in order (a window in flight), resends everything unacked
    after a reconnect with the same client ids, resumes with its inbox cursor, and
    heartbeats at the interval the server asks for (which is also how a lost live
    push gets recovered). It does NOT deduplicate: the test sees exactly what the
    server delivered."""

    def __init__(self, server: LiveServer, raw_key: str, peer_id: int, outbox: list[str], *,
                 name: str, window: int = 20, port: int | None = None):
        self.server, self.raw_key, self.peer_id = server, raw_key, peer_id
        self.port = port or server.port  # another port: through a proxy
        self.name, self.window = name, window
        self.unacked = deque((f"{name}-{i}", body) for i, body in enumerate(outbox))
        self.sent: dict[str, int] = {}  # client_msg_id -> seq from the server's ack
        self.received: list[dict] = []
        self.cursor = 0
        self.errors: list[dict] = []
        self.ws = None
        self.connections = 0
        self.expected = 0
        self.stalls = 0  # connections given up on: no frame for 2.5 heartbeats

    def done(self) -> bool:
        return not self.unacked and len(self.received) >= self.expected

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self._session(stop)
            except (ConnectionClosed, OSError, InvalidStatus, TimeoutError, Stalled):
                await asyncio.sleep(0.05 + random.random() * 0.1)

    def local_port(self) -> int | None:
        """This side's port of the current connection (the proxy's peer port)."""
        ws = self.ws
        return ws.transport.get_extra_info("sockname")[1] if ws is not None else None

    def drop(self) -> bool:
        """Cut the TCP connection abruptly (no close frame), as a network drop does."""
        if self.ws is None:
            return False
        self.ws.transport.abort()
        return True

    async def _session(self, stop: asyncio.Event) -> None:
        url = f"ws://127.0.0.1:{self.port}/ws/chat/"
        async with connect(url, origin=self.server.base, open_timeout=5, max_queue=None,
                           additional_headers={"Authorization": f"Bearer {self.raw_key}"},
                           close_timeout=1) as ws:
            self.ws = ws
            try:
                await self._converse(ws, stop)
            finally:
                self.ws = None

    async def _converse(self, ws, stop: asyncio.Event) -> None:
        self.connections += 1
        await ws.send(json.dumps({"type": "hello", "since": self.cursor}))
        in_flight = deque()
        unacked_recv = 0
        heartbeat_every, last_heartbeat = 10.0, time.monotonic()
        last_frame = time.monotonic()
        while not stop.is_set():
            if time.monotonic() - last_frame > 2.5 * heartbeat_every:
                # Stalled (not even heartbeat_ok comes back) and it will not close by
                # itself: give it up and reconnect, as the chat page does.
                self.stalls += 1
                ws.transport.abort()
                raise Stalled
            if time.monotonic() - last_heartbeat >= heartbeat_every:
                await ws.send(json.dumps({"type": "heartbeat"}))
                last_heartbeat = time.monotonic()
            # Keep `window` sends in flight, oldest unacked first (order is the promise).
            while len(in_flight) < self.window and len(in_flight) < len(self.unacked):
                cid, body = self.unacked[len(in_flight)]
                await ws.send(json.dumps({"type": "send", "to": self.peer_id, "client_msg_id": cid,
                                          "body": body}))
                in_flight.append(cid)
            try:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 0.5))
            except TimeoutError:
                if unacked_recv:
                    await ws.send(json.dumps({"type": "ack", "upto": self.cursor}))
                    unacked_recv = 0
                continue
            last_frame = time.monotonic()
            kind = frame["type"]
            if kind == "welcome":
                heartbeat_every = frame["heartbeat_seconds"]
            elif kind == "sent":
                assert in_flight and frame["client_msg_id"] == in_flight[0], (frame, list(in_flight)[:3])
                in_flight.popleft()
                cid, _ = self.unacked.popleft()
                self.sent[cid] = frame["seq"]
            elif kind == "message":
                self.received.append(frame)
                self.cursor = frame["inbox_seq"]
                unacked_recv += 1
                if unacked_recv >= 50:
                    await ws.send(json.dumps({"type": "ack", "upto": self.cursor}))
                    unacked_recv = 0
            elif kind == "error":
                self.errors.append(frame)


async def wait_until(predicate, timeout: float, interval: float = 0.05) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(interval)
