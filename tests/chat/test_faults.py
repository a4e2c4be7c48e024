"""Faults outside the process: a server killed -9 (its channels must leave the
groups), and a network that delays, stalls and cuts connections mid-frame."""

import asyncio
import json
import random
import time

import pytest
from channels.db import database_sync_to_async as db
from channels.layers import get_channel_layer
from websockets.asyncio.client import connect

from chat.events import user_group
from chat.models import Message
from core.redis import get_aredis
from tests.chat.live import ChatClient, LiveServer
from tests.faultproxy import FaultProxy

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.asyncio,
              pytest.mark.needs_services]  # uvicorn processes sharing Redis
UNLIMITED = {"CHAT_SEND_RATE": "1000000", "CHAT_SEND_BURST": "1000000"}
GROUP_EXPIRY = 3


async def _welcomed(url: str, origin: str, key: str):
    ws = await connect(url, origin=origin, additional_headers={"Authorization": f"Bearer {key}"})
    while json.loads(await ws.recv())["type"] != "welcome":
        pass
    await ws.send(json.dumps({"type": "hello"}))
    return ws


async def _next_message(ws, timeout: float = 10) -> dict:
    while (frame := json.loads(await asyncio.wait_for(ws.recv(), timeout)))["type"] != "message":
        pass
    return frame


async def test_should_drop_a_killed_servers_channels_from_the_groups_within_the_expiry(pair):
    (alice, akey), (bob, bkey) = pair
    env = dict(UNLIMITED, CHANNEL_LAYER_GROUP_EXPIRY=str(GROUP_EXPIRY), CHAT_PRESENCE_POLL_SECONDS="1")
    group_key = get_channel_layer()._group_key(user_group(bob.pk))
    redis = get_aredis()
    with LiveServer(**env) as doomed, LiveServer(**env) as survivor:
        bob_doomed = await _welcomed(doomed.ws_url, doomed.base, bkey)
        bob_live = await _welcomed(survivor.ws_url, survivor.base, bkey)
        alice_ws = await _welcomed(survivor.ws_url, survivor.base, akey)
        assert await redis.zcard(group_key) == 2
        doomed.kill()  # -9: no disconnect, no group_discard
        killed, killed_wall, sent = time.monotonic(), time.time(), 0
        # Each send's group_send prunes memberships older than the expiry; the live
        # socket's is renewed by its server's tick, the dead one's never again.
        while await redis.zcard(group_key) != 1:
            assert time.monotonic() - killed < GROUP_EXPIRY + 3, "the dead channel is still in the group"
            await alice_ws.send(json.dumps({"type": "send", "to": bob.pk, "client_msg_id": f"k{sent}",
                                            "body": f"k{sent}"}))
            sent += 1
            assert (await _next_message(bob_live))["body"] == f"k{sent - 1}"
        # The live socket joined before the kill, so without renewal it would be gone
        # by now too: its membership is renewed past that point and pushes still come.
        live_member = (await redis.zrange(group_key, 0, -1))[0]
        while await redis.zscore(group_key, live_member) <= killed_wall + GROUP_EXPIRY:
            assert time.monotonic() - killed < 2 * GROUP_EXPIRY + 3, "the live membership was not renewed"
            await asyncio.sleep(0.2)
        await alice_ws.send(json.dumps({"type": "send", "to": bob.pk, "client_msg_id": "z", "body": "last"}))
        assert (await _next_message(bob_live))["body"] == "last"
        assert await redis.zrange(group_key, 0, -1) == [live_member]
        for ws in (bob_doomed, bob_live, alice_ws):
            ws.transport.abort()


MESSAGES = 800
CUTS, STALLS = 12, 2


async def test_should_deliver_exactly_once_in_order_through_latency_stalls_and_mid_frame_cuts(pair):
    (alice, akey), (bob, bkey) = pair
    half = MESSAGES // 2
    # Heartbeats every second: a stalled socket is given up on after 2.5 s of silence.
    with LiveServer(**UNLIMITED, CHAT_HEARTBEAT_SECONDS="1") as server:
        async with FaultProxy(server.port, latency=0.01) as proxy:
            a = ChatClient(server, akey, bob.pk, [f"a{i}" for i in range(half)], name="a", port=proxy.port)
            b = ChatClient(server, bkey, alice.pk, [f"b{i}" for i in range(half)], name="b", port=proxy.port)
            a.expected = b.expected = half
            stop = asyncio.Event()
            tasks = [asyncio.create_task(c.run(stop)) for c in (a, b)]
            rng = random.Random(21)
            # Progress counts sends and deliveries (2 x MESSAGES at the end): every cut is
            # armed by three quarters of the way, so a fast finish cannot skip the last ones.
            cut_at = sorted(rng.sample(range(50, 3 * MESSAGES // 2), CUTS))
            stall_at = [MESSAGES // 2, MESSAGES]
            started, missed = time.monotonic(), 0
            try:
                while not (a.done() and b.done()):
                    assert time.monotonic() - started < 90, (len(a.received), len(b.received))
                    progress = len(a.received) + len(b.received) + len(a.sent) + len(b.sent)
                    client = rng.choice((a, b))
                    if proxy.cuts_missed() > missed:  # that connection was given up on: cut another
                        cut_at.insert(0, progress)
                        missed += 1
                    if cut_at and progress >= cut_at[0] and (port := client.local_port()):
                        if proxy.cut_mid_frame(port):
                            cut_at.pop(0)
                    if stall_at and progress >= stall_at[0] and (port := client.local_port()):
                        if proxy.stall(port):
                            stall_at.pop(0)
                    await asyncio.sleep(0.01)
            finally:
                stop.set()
                await asyncio.gather(*tasks, return_exceptions=True)

    # Every planned cut was armed, and one more for each connection given up on first.
    assert proxy.cuts >= CUTS and proxy.stalls == STALLS
    # Every stalled connection was noticed by the heartbeat and replaced (a slow
    # moment may make a client give up on a healthy one too: that is allowed).
    assert a.stalls + b.stalls >= STALLS, (a.stalls, b.stalls)
    assert proxy.cuts_done >= CUTS - 1  # the last one may be armed after the final frame
    assert a.connections + b.connections >= 2 + proxy.cuts_done + STALLS
    assert not a.errors and not b.errors, (a.errors[:3], b.errors[:3])
    for receiver, sender in ((a, b), (b, a)):
        assert [m["body"] for m in receiver.received] == [f"{sender.name}{i}" for i in range(half)]
        assert [m["inbox_seq"] for m in receiver.received] == list(range(1, half + 1))
    assert sorted([*a.sent.values(), *b.sent.values()]) == list(range(1, MESSAGES + 1))
    assert await db(Message.objects.count)() == MESSAGES
