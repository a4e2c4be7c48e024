"""Chat delivery benchmark: N connected pairs over a real uvicorn server.

    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/promptyard_bench  # migrated
    export REDIS_URL=redis://127.0.0.1:6379/5
    .venv/bin/python bench/chat.py                # N = 50, 200
    .venv/bin/python bench/chat.py --big          # adds N = 1000 (minutes on 2 cores)
    .venv/bin/python bench/chat.py --rounds 3     # alternate relay/chat 3 times per N
    .venv/bin/python bench/chat.py --workers 2    # one uvicorn process per core

The pairs are split over --clients client processes (one Python process cannot
drive 2,000 sockets on this machine). For each N:

- closed loop: every pair's sender sends --messages messages to its receiver, with
  --window sends in flight (a send leaves the window when the server acks it), and
  the receiver acks as a real client does. Printed: messages/s delivered end to
  end, p50/p99 delivery latency (send -> receiver's frame, one clock; on a
  saturated server this is queueing, Little's law, not an interactive figure);
  relay and chat rounds alternate --rounds times, each ratio from a relay round
  and the chat round right after it, then their median (a shared machine's noise
  hits both);
- open loop (--open-load, default 0.5): Poisson arrivals at that share of chat's
  measured rate for --open-seconds, whatever the server does; latency counts from
  each send's scheduled time. This is the interactive figure.

Modes:
- chat:  /ws/chat/ (inbox write + seq assignment in PostgreSQL, publish after commit);
- relay: a plain Channels consumer that forwards the frame to the peer's group
  through the same Redis channel layer, no database: the ceiling for this stack.

`lost` counts what a relay receiver never got (the channel layer is at-most-once);
chat loses nothing: a stalled receiver heartbeats and catches up from its inbox.
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

        if os.environ.get("BENCH_RELAY_NO_HOP"):
            # --relay-no-hop: skip channels' per-message hop to its sync thread, as
            # ChatConsumer.dispatch does (a fairer ceiling for chat's figure).
            async def dispatch(self, message):
                from channels.consumer import get_handler_name

                await getattr(self, get_handler_name(message))(message)

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


async def _open(url_a: str, url_b: str, head: int, mode: str, origin: str, handshakes: asyncio.Semaphore,
                keys=(None, None)):
    """Both sockets of a pair, connected (and the receiver live) before the clock starts."""
    from websockets.asyncio.client import connect

    def auth(key):
        return {"Authorization": f"Bearer {key}"} if key else None

    async with handshakes:
        a = await connect(url_a, origin=origin, max_queue=None, open_timeout=120,
                          additional_headers=auth(keys[0]))
        b = await connect(url_b, origin=origin, max_queue=None, open_timeout=120,
                          additional_headers=auth(keys[1]))
        if mode == "chat":
            await b.send(json.dumps({"type": "hello", "since": head}))
            await _synced(b)
    return a, b


async def _receive(b, mode: str, expected, latencies: list[float], give_up: float = 0,
                   last: list[float] | None = None) -> int:
    """Counts the pair's deliveries until `expected()` (None while the sender
    still sends) is reached; a chat receiver that hears nothing heartbeats.
    `last[0]` is when the latest delivery came (a relay's wait for a frame it
    lost for good does not count as time spent delivering)."""
    got = 0
    while expected() is None or got < expected():
        try:
            timeout = STALL_SECONDS if mode == "chat" else give_up or RELAY_GIVE_UP_SECONDS
            frame = json.loads(await asyncio.wait_for(b.recv(), timeout))
        except TimeoutError:
            if mode == "relay":
                return got  # lost in the channel layer for good: counted as lost
            # As a real client does: a heartbeat catches up from the inbox.
            await b.send(json.dumps({"type": "heartbeat"}))
            continue
        if mode == "chat" and frame.get("type") != "message":
            continue
        now = time.perf_counter()
        latencies.append(now - float(frame["body"]))
        if last is not None:
            last[0] = max(last[0], now)
        got += 1
        if mode == "chat" and got % 20 == 0:
            await b.send(json.dumps({"type": "ack", "upto": frame["inbox_seq"]}))
    return got


def _frame(peer_b: int, i: int, stamp: float) -> str:
    return json.dumps({"type": "send", "to": peer_b, "client_msg_id": f"{time.time_ns()}-{i}",
                       "body": repr(stamp)})


async def _closed(a, b, peer_b: int, mode: str, load, latencies: list[float], last) -> tuple[int, int]:
    """--window sends in flight; a send leaves the window when the server acks it."""
    messages, window = load
    credit = asyncio.Semaphore(window)
    acker = asyncio.create_task(_count_acks(a, credit))
    receiver = asyncio.create_task(_receive(b, mode, lambda: messages, latencies, last=last))
    for i in range(messages):
        await credit.acquire()
        await a.send(_frame(peer_b, i, time.perf_counter()))
    got = await receiver
    acker.cancel()
    return messages, got


async def _open_loop(a, b, peer_b: int, mode: str, load, latencies: list[float], last) -> tuple[int, int]:
    """Poisson arrivals at a fixed rate per sender for `duration` seconds, whatever
    the server does (no window). Latency counts from the scheduled send time, so
    a send delayed by a slow server counts its wait too."""
    import random

    rate, duration, seed = load
    rng = random.Random(seed)
    sent = None
    acker = asyncio.create_task(_count_acks(a, None))
    # Nothing saturates here: a relay frame missing this long is lost.
    receiver = asyncio.create_task(_receive(b, mode, lambda: sent, latencies, give_up=STALL_SECONDS,
                                            last=last))
    start = time.perf_counter()
    due, i = start + rng.expovariate(rate), 0
    while due - start < duration:
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        await a.send(_frame(peer_b, i, due))
        i += 1
        due += rng.expovariate(rate)
    sent = i
    got = await receiver
    acker.cancel()
    return sent, got


async def _synced(ws) -> None:
    while json.loads(await ws.recv())["type"] != "synced":
        pass


async def _count_acks(ws, credit: asyncio.Semaphore | None) -> None:
    while True:
        frame = json.loads(await ws.recv())
        if frame["type"] in ("sent", "error") and credit is not None:
            credit.release()


async def _client(base: str, pairs, heads, mode: str, load, barrier) -> dict:
    ws = base.replace("http", "ws")
    latencies: list[float] = []
    handshakes = asyncio.Semaphore(HANDSHAKES_IN_FLIGHT)
    opening = []
    for ((a_id, a_key), (b_id, b_key)), head in zip(pairs, heads, strict=True):
        if mode == "chat":
            url_a, url_b, keys = f"{ws}/ws/chat/", f"{ws}/ws/chat/", (a_key, b_key)
        else:
            url_a, url_b = f"{ws}/ws/bench-relay/?me={a_id}", f"{ws}/ws/bench-relay/?me={b_id}"
            keys = (None, None)
        opening.append(_open(url_a, url_b, head, mode, base, handshakes, keys))
    sockets = await asyncio.gather(*opening)
    await asyncio.to_thread(barrier.wait)  # every client process starts its clock together
    started = time.perf_counter()
    last = [started]
    drive = _open_loop if load[0] == "open" else _closed
    counts = await asyncio.gather(*[
        drive(a, b, pairs[i][1][0], mode, (*load[1:], i) if load[0] == "open" else load[1:], latencies, last)
        for i, (a, b) in enumerate(sockets)])
    ended = last[0]
    await asyncio.gather(*[ws.close() for pair in sockets for ws in pair])
    return {"started": started, "ended": ended, "sent": sum(c[0] for c in counts),
            "delivered": sum(c[1] for c in counts), "latencies": latencies}


def _client_process(base, pairs, heads, mode, load, barrier, results) -> None:
    results.put(asyncio.run(_client(base, pairs, heads, mode, load, barrier)))


def _inbox_heads(user_ids: list[int]) -> list[int]:
    """Each receiver starts live at its inbox head, not from old bench runs."""
    from chat.models import ChatProfile

    heads = dict(ChatProfile.objects.filter(user_id__in=user_ids).values_list("user_id", "inbox_seq"))
    return [heads.get(uid, 0) for uid in user_ids]


def run_mode(base: str, users, pairs: int, mode: str, load: tuple, clients: int) -> dict:
    """One round: `pairs` pairs split over `clients` processes (one process cannot
    drive 2,000 sockets here). load: ("closed", messages, window) or
    ("open", msg/s per sender, seconds)."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    clients = max(1, min(clients, pairs))
    barrier, results = ctx.Barrier(clients), ctx.Queue()
    all_pairs = [(users[2 * i], users[2 * i + 1]) for i in range(pairs)]
    heads = _inbox_heads([b[0] for _, b in all_pairs])
    procs = [ctx.Process(target=_client_process,
                         args=(base, all_pairs[c::clients], heads[c::clients], mode, load, barrier, results))
             for c in range(clients)]
    for proc in procs:
        proc.start()
    parts = [results.get() for _ in procs]
    for proc in procs:
        proc.join()
    latencies = sorted(x for part in parts for x in part["latencies"])
    elapsed = max(p["ended"] for p in parts) - min(p["started"] for p in parts)
    delivered, sent = sum(p["delivered"] for p in parts), sum(p["sent"] for p in parts)
    return {"rate": delivered / elapsed, "p50": statistics.median(latencies) * 1000,
            "p99": latencies[max(0, int(len(latencies) * 0.99) - 1)] * 1000, "lost": sent - delivered}


def _row(n: int, mode: str, r: dict, extra: str = "") -> None:
    print(f"{n:>5} {mode:>12} {r['rate']:>8.0f} {r['p50']:>8.1f} {r['p99']:>8.1f} {r['lost']:>6}   {extra}",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", default="50,200", help="comma-separated N values")
    parser.add_argument("--big", action="store_true", help="also N=1000")
    parser.add_argument("--messages", type=int, default=20, help="messages per pair")
    parser.add_argument("--window", type=int, default=5, help="sends in flight per sender")
    parser.add_argument("--rounds", type=int, default=1,
                        help="relay/chat rounds per N, alternating (the machine's noise hits both)")
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument("--open-load", type=float, default=0.5,
                        help="then an open-loop round at this share of chat's measured rate (0: none)")
    parser.add_argument("--open-rate", default="",
                        help="comma-separated offered msg/s for open-loop rounds (no closed loop then)")
    parser.add_argument("--open-seconds", type=float, default=8.0, help="length of the open-loop round")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    parser.add_argument("--chat-only", action="store_true", help="no relay rounds (for profiling chat)")
    parser.add_argument("--relay-no-hop", action="store_true",
                        help="the relay skips channels' per-message sync-thread hop, as chat does")
    args = parser.parse_args()
    if not (os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")):
        sys.exit("bench/chat.py needs DATABASE_URL (PostgreSQL, migrated) and REDIS_URL")
    sizes = [int(n) for n in args.pairs.split(",")] + ([1000] if args.big else [])
    users = _users(2 * max(sizes))

    sys.path.insert(0, str(ROOT / "tests"))
    from tests.livesubprocess import free_port, running_server

    port = free_port()
    env = dict(os.environ, CHAT_SEND_RATE="1000000", CHAT_SEND_BURST="1000000")
    if args.relay_no_hop:
        env["BENCH_RELAY_NO_HOP"] = "1"
    cmd = ["-m", "uvicorn", "bench.chat:application", "--port", str(port), "--lifespan", "off",
           "--log-level", "warning", "--ws", "websockets", "--backlog", "4096",
           "--ws-per-message-deflate", "false",  # as manage.py serve runs
           "--workers", str(args.workers)]
    print(f"{args.clients} client processes, {args.workers} server process(es); closed loop: "
          f"{args.messages} messages per pair, window {args.window}"
          + ("; relay without the sync-thread hop" if args.relay_no_hop else ""))
    print(f"{'N':>5} {'mode':>12} {'msg/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'lost':>6}   chat/relay")
    closed = ("closed", args.messages, args.window)
    with running_server(cmd, env, port) as server:
        for n in sizes:
            ratios, chat_rates = [], []
            if args.open_rate:
                for offered in (float(r) for r in args.open_rate.split(",")):
                    for mode in ("chat",) if args.chat_only else ("relay", "chat"):
                        opened = ("open", offered / n, args.open_seconds)
                        _row(n, f"{mode} open", run_mode(server.base, users, n, mode, opened, args.clients),
                             f"offered {offered:.0f} msg/s (Poisson)")
                continue
            for _ in range(args.rounds):
                if not args.chat_only:
                    relay = run_mode(server.base, users, n, "relay", closed, args.clients)
                    _row(n, "relay", relay)
                chat = run_mode(server.base, users, n, "chat", closed, args.clients)
                chat_rates.append(chat["rate"])
                if not args.chat_only:
                    ratios.append(chat["rate"] / relay["rate"])
                _row(n, "chat", chat, f"{ratios[-1]:.2f}x rate" if ratios else "")
            if args.rounds > 1 and ratios:
                print(f"{n:>5} {'median':>12} {'':>8} {'':>8} {'':>8} {'':>6}   "
                      f"{statistics.median(ratios):.2f}x rate")
            if args.open_load:
                offered = args.open_load * statistics.median(chat_rates)
                opened = ("open", offered / n, args.open_seconds)
                for mode in ("chat",) if args.chat_only else ("relay", "chat"):
                    _row(n, f"{mode} open", run_mode(server.base, users, n, mode, opened, args.clients),
                         f"offered {offered:.0f} msg/s (Poisson)")


if __name__ == "__main__":
    main()
