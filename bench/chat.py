"""Chat delivery benchmark: N connected pairs over a real uvicorn server.

    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/promptyard_bench  # migrated
    export REDIS_URL=redis://127.0.0.1:6379/5
    .venv/bin/python bench/chat.py                # N = 50, 200
    .venv/bin/python bench/chat.py --big          # adds N = 1000 (minutes on 2 cores)
    .venv/bin/python bench/chat.py --workers 2    # one uvicorn process per core

For each N, every pair's sender sends --messages messages to its receiver, with
--window sends in flight (a send leaves the window when the server acks it),
and the receiver acks as a real client does. Printed per N: messages/s
delivered end to end, p50/p99 delivery latency (send -> receiver's frame, one
clock), for

- chat:  /ws/chat/ (inbox write + seq assignment in PostgreSQL, publish on commit);
- relay: a plain Channels consumer that forwards the frame to the peer's group
  through the same Redis channel layer, no database: the ceiling for this stack;

and the ratio chat/relay: what the durable inbox costs per message. `lost` counts
what a relay receiver never got (the channel layer is at-most-once); chat loses
nothing: a stalled receiver heartbeats and catches up from its inbox.
The relay consumer lives only here (served by this module's `application`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A chat receiver that hears nothing this long heartbeats, as the page does (a
# heartbeat catches up from the inbox); a relay receiver gives up after
# RELAY_GIVE_UP_SECONDS and counts the rest as lost (at N=1,000 a saturated
# server takes many seconds per round, so this must be generous).
STALL_SECONDS = 10.0
RELAY_GIVE_UP_SECONDS = 120.0
# Sockets are opened a few at a time before the clock starts (2,000 at once
# overrun the handshake timeout on 2 cores); rates count the exchange only.
HANDSHAKES_IN_FLIGHT = 50
sys.path.insert(0, str(ROOT))


def _build_application():
    """config.asgi's app plus the bench-only relay route (same middleware stack)."""
    import importlib

    django_asgi_app = importlib.import_module("config.asgi").django_asgi_app  # sets Django up first
    from channels.auth import AuthMiddlewareStack
    from channels.generic.websocket import AsyncWebsocketConsumer
    from channels.routing import ProtocolTypeRouter, URLRouter
    from channels.security.websocket import AllowedHostsOriginValidator
    from django.urls import path

    from accounts.websocket import ApiKeyWebsocketMiddleware
    from config.routing import websocket_urlpatterns

    class RelayConsumer(AsyncWebsocketConsumer):
        async def connect(self):
            self.me = self.scope["query_string"].decode().split("me=")[-1]
            await self.channel_layer.group_add(f"bench.{self.me}", self.channel_name)
            await self.accept()

        async def receive(self, text_data=None, bytes_data=None):
            frame = json.loads(text_data)
            await self.channel_layer.group_send(f"bench.{frame['to']}", {"type": "relay", "frame": text_data})
            await self.send(text_data=json.dumps({"type": "sent"}))  # the sender's ack, as chat has

        async def relay(self, event):
            await self.send(text_data=event["frame"])

    routes = [*websocket_urlpatterns, path("ws/bench-relay/", RelayConsumer.as_asgi())]
    return ProtocolTypeRouter({
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(ApiKeyWebsocketMiddleware(URLRouter(routes)))),
    })


def __getattr__(name):  # uvicorn imports `bench.chat:application` lazily
    if name == "application":
        return _build_application()
    raise AttributeError(name)


def _users(count: int) -> list[tuple[int, str]]:
    """(user id, raw API key) for bench users, created on first use."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from django.contrib.auth import get_user_model

    from accounts.services import api_key_create

    user_model = get_user_model()
    existing = {u.username: u for u in user_model.objects.filter(username__startswith="bench-chat-")}
    out = []
    for i in range(count):
        user = existing.get(f"bench-chat-{i}") or user_model.objects.create_user(username=f"bench-chat-{i}")
        out.append((user.pk, api_key_create(user=user, name="bench")[1]))
    return out


async def _open(url_a: str, url_b: str, mode: str, origin: str, handshakes: asyncio.Semaphore):
    """Both sockets of a pair, connected (and the receiver live) before the clock starts."""
    from websockets.asyncio.client import connect

    async with handshakes:
        a = await connect(url_a, origin=origin, max_queue=None, open_timeout=120)
        b = await connect(url_b, origin=origin, max_queue=None, open_timeout=120)
        if mode == "chat":
            await b.send(json.dumps({"type": "hello", "since": await _head(b)}))
    return a, b


async def _exchange(a, b, peer_b: int, mode: str, messages: int, window: int, latencies: list[float]) -> int:
    async def receive():
        got = 0
        while got < messages:
            try:
                timeout = STALL_SECONDS if mode == "chat" else RELAY_GIVE_UP_SECONDS
                frame = json.loads(await asyncio.wait_for(b.recv(), timeout))
            except TimeoutError:
                if mode == "relay":
                    return got  # lost in the channel layer for good: counted as lost
                # As a real client does: a heartbeat catches up from the inbox.
                await b.send(json.dumps({"type": "heartbeat"}))
                continue
            if mode == "chat" and frame.get("type") != "message":
                continue
            latencies.append(time.perf_counter() - float(frame["body"]))
            got += 1
            if mode == "chat" and got % 20 == 0:
                await b.send(json.dumps({"type": "ack", "upto": frame["inbox_seq"]}))
        return got

    async def send():
        credit = asyncio.Semaphore(window)
        acker = asyncio.create_task(_count_acks(a, credit))
        for i in range(messages):
            await credit.acquire()
            frame = {"type": "send", "to": peer_b, "client_msg_id": f"{time.time_ns()}-{i}",
                     "body": repr(time.perf_counter())}
            await a.send(json.dumps(frame))
        return acker

    receiver = asyncio.create_task(receive())
    acker = await send()
    got = await receiver
    acker.cancel()
    return got


async def _head(ws) -> int:
    """The receiver's inbox head: start live, not from old bench runs."""
    await ws.send(json.dumps({"type": "hello", "since": 0}))
    head = 0
    while True:
        frame = json.loads(await ws.recv())
        if frame["type"] == "synced":
            return frame["inbox_seq"] or head
        head = frame.get("inbox_seq") or head


async def _count_acks(ws, credit: asyncio.Semaphore) -> None:
    while True:
        frame = json.loads(await ws.recv())
        if frame["type"] in ("sent", "error"):
            credit.release()


async def run_mode(base: str, users, pairs: int, mode: str, messages: int, window: int) -> dict:
    ws = base.replace("http", "ws")
    latencies: list[float] = []
    handshakes = asyncio.Semaphore(HANDSHAKES_IN_FLIGHT)
    opening = []
    for i in range(pairs):
        (a_id, a_key), (b_id, b_key) = users[2 * i], users[2 * i + 1]
        if mode == "chat":
            url_a, url_b = f"{ws}/ws/chat/?api_key={a_key}", f"{ws}/ws/chat/?api_key={b_key}"
        else:
            url_a, url_b = f"{ws}/ws/bench-relay/?me={a_id}", f"{ws}/ws/bench-relay/?me={b_id}"
        opening.append(_open(url_a, url_b, mode, base, handshakes))
    sockets = await asyncio.gather(*opening)
    started = time.perf_counter()
    delivered = sum(await asyncio.gather(*[
        _exchange(a, b, users[2 * i + 1][0], mode, messages, window, latencies)
        for i, (a, b) in enumerate(sockets)]))
    elapsed = time.perf_counter() - started
    await asyncio.gather(*[ws.close() for pair in sockets for ws in pair])
    latencies.sort()
    return {"rate": delivered / elapsed, "p50": statistics.median(latencies) * 1000,
            "p99": latencies[int(len(latencies) * 0.99) - 1] * 1000, "lost": pairs * messages - delivered}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", default="50,200", help="comma-separated N values")
    parser.add_argument("--big", action="store_true", help="also N=1000")
    parser.add_argument("--messages", type=int, default=20, help="messages per pair")
    parser.add_argument("--window", type=int, default=5, help="sends in flight per sender")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    args = parser.parse_args()
    if not (os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")):
        sys.exit("bench/chat.py needs DATABASE_URL (PostgreSQL, migrated) and REDIS_URL")
    sizes = [int(n) for n in args.pairs.split(",")] + ([1000] if args.big else [])
    users = _users(2 * max(sizes))

    sys.path.insert(0, str(ROOT / "tests"))
    from tests.livesubprocess import free_port, running_server

    port = free_port()
    env = dict(os.environ, CHAT_SEND_RATE="1000000", CHAT_SEND_BURST="1000000")
    cmd = ["-m", "uvicorn", "bench.chat:application", "--port", str(port), "--lifespan", "off",
           "--log-level", "warning", "--ws", "websockets", "--backlog", "4096",
           "--workers", str(args.workers)]
    print(f"{'N':>5} {'mode':>6} {'msg/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'lost':>6}   chat/relay")
    with running_server(cmd, env, port) as server:
        base = server.base
        for n in sizes:
            relay = asyncio.run(run_mode(base, users, n, "relay", args.messages, args.window))
            chat = asyncio.run(run_mode(base, users, n, "chat", args.messages, args.window))
            for mode, r in (("relay", relay), ("chat", chat)):
                print(f"{n:>5} {mode:>6} {r['rate']:>8.0f} {r['p50']:>8.1f} {r['p99']:>8.1f} {r['lost']:>6}",
                      end="")
                print(f"   {chat['rate'] / relay['rate']:.2f}x rate" if mode == "chat" else "")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
