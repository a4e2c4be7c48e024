"""No accepted message is lost, duplicated or reordered: a real uvicorn server
over TCP, the Redis channel layer and PostgreSQL, with drops and a restart."""

import asyncio
import json
import os
import random
import threading
import time

import httpx
import pytest
from channels.db import database_sync_to_async as db
from websockets.asyncio.client import connect

from chat import services
from chat.models import InboxEntry, Message
from tests.chat.live import ChatClient, LiveServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# Messages exchanged in the drop-and-restart run (about 45 s for 5,000 here).
MESSAGES = int(os.environ.get("CHAT_E2E_MESSAGES", "5000"))
MIN_DROPS = 20
UNLIMITED = {"CHAT_SEND_RATE": "1000000", "CHAT_SEND_BURST": "1000000"}


def _auth(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.asyncio
@pytest.mark.timeout(60 + MESSAGES // 4)
@pytest.mark.needs_services  # uvicorn processes sharing Redis
async def test_should_deliver_every_message_once_in_order_through_drops_and_a_restart(pair):
    (alice, akey), (bob, bkey) = pair
    half = MESSAGES // 2
    with LiveServer(**UNLIMITED) as server:
        a = ChatClient(server, akey, bob.pk, [f"a{i}" for i in range(half)], name="a")
        b = ChatClient(server, bkey, alice.pk, [f"b{i}" for i in range(MESSAGES - half)], name="b")
        a.expected, b.expected = MESSAGES - half, half
        stop = asyncio.Event()
        tasks = [asyncio.create_task(c.run(stop)) for c in (a, b)]
        drops, restarted = 0, False
        started = time.monotonic()
        try:
            # Drop a random side at random points, spread over the run; restart once halfway.
            rng = random.Random(8)
            drop_at = sorted(rng.sample(range(1, MESSAGES), MIN_DROPS + 5))
            while not (a.done() and b.done()):
                progress_report = (len(a.received), len(b.received), drops)
                assert time.monotonic() - started < 60 + MESSAGES / 10, progress_report
                progress = len(a.received) + len(b.received) + len(a.sent) + len(b.sent)
                if drop_at and progress >= 2 * drop_at[0]:
                    drop_at.pop(0)
                    drops += rng.choice((a, b)).drop() or rng.choice((a, b)).drop()
                if not restarted and progress >= MESSAGES:
                    await asyncio.to_thread(server.restart)
                    restarted = True
                await asyncio.sleep(0.01)
            # Both sides have everything; nothing below reads the acks, so nothing waits for them.
        finally:
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
        elapsed = time.monotonic() - started

    assert restarted and server.restarts == 1
    assert drops >= MIN_DROPS, drops
    assert not a.errors and not b.errors, (a.errors[:3], b.errors[:3])
    for receiver, sender in ((a, b), (b, a)):
        bodies = [m["body"] for m in receiver.received]
        # Exactly once, in the sender's order, counts equal.
        assert bodies == [body for _, body in _outbox(sender)], _first_difference(bodies, sender)
        seqs = [m["seq"] for m in receiver.received]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        inbox = [m["inbox_seq"] for m in receiver.received]
        assert inbox == list(range(1, len(inbox) + 1))
    all_seqs = sorted([*a.sent.values(), *b.sent.values()])
    assert all_seqs == list(range(1, MESSAGES + 1))
    assert await db(Message.objects.count)() == MESSAGES
    print(f"\n{MESSAGES} messages, {drops} drops, 1 restart, {a.connections + b.connections} "
          f"connections in {elapsed:.1f}s")


def _outbox(client: ChatClient) -> list[tuple[str, str]]:
    return sorted(((cid, cid.replace("-", "")) for cid in client.sent), key=lambda p: int(p[0].split("-")[1]))


def _first_difference(bodies: list[str], sender: ChatClient):
    expected = [body for _, body in _outbox(sender)]
    for i, (got, want) in enumerate(zip(bodies, expected, strict=False)):
        if got != want:
            return f"at {i}: got {got}, want {want} ({len(bodies)} vs {len(expected)})"
    return f"lengths {len(bodies)} vs {len(expected)}"


@pytest.mark.asyncio
@pytest.mark.needs_services  # uvicorn processes sharing Redis
async def test_should_deliver_offline_messages_in_order_on_connect(pair):
    (alice, akey), (bob, bkey) = pair
    count = 300
    with LiveServer(**UNLIMITED) as server:
        async with connect(server.ws_url, origin=server.base, additional_headers=_auth(akey)) as ws:
            for i in range(count - 50):
                await ws.send(json.dumps({"type": "send", "to": bob.pk, "client_msg_id": f"o{i}",
                                          "body": f"offline {i}"}))
            acks = 0
            while acks < count - 50:
                acks += json.loads(await ws.recv())["type"] == "sent"
        # The HTTP API is a second way in; same inbox, same order.
        auth = {"Authorization": f"Bearer {akey}"}
        async with httpx.AsyncClient(base_url=server.base, headers=auth) as http:
            for i in range(count - 50, count):
                response = await http.post("/api/chat/messages", json={
                    "to": bob.pk, "client_msg_id": f"o{i}", "body": f"offline {i}"})
                assert response.status_code == 201, response.text

        async with connect(server.ws_url, origin=server.base, additional_headers=_auth(bkey)) as ws:
            await ws.send(json.dumps({"type": "hello"}))
            got = []
            while True:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
                if frame["type"] == "synced":
                    break
                if frame["type"] == "message":
                    got.append(frame)
            assert [m["body"] for m in got] == [f"offline {i}" for i in range(count)]
            assert [m["seq"] for m in got] == list(range(1, count + 1))
            await ws.send(json.dumps({"type": "ack", "upto": got[-1]["inbox_seq"]}))
            await ws.send(json.dumps({"type": "heartbeat"}))
            while json.loads(await ws.recv())["type"] != "heartbeat_ok":
                pass
    assert await db(InboxEntry.objects.filter(user=bob, delivered_at__isnull=True).count)() == 0


@pytest.mark.asyncio
@pytest.mark.needs_services  # uvicorn processes sharing Redis
async def test_should_number_concurrent_sends_from_both_sides_without_gaps_or_duplicates(pair):
    (alice, akey), (bob, bkey) = pair
    per_socket, sockets_per_side, http_per_side = 60, 3, 60
    with LiveServer(**UNLIMITED) as server:
        async def ws_sender(key, to, tag):
            seqs = []
            async with connect(server.ws_url, origin=server.base, additional_headers=_auth(key)) as ws:
                for i in range(per_socket):
                    await ws.send(json.dumps({"type": "send", "to": to, "client_msg_id": f"{tag}-{i}",
                                              "body": tag}))
                while len(seqs) < per_socket:
                    frame = json.loads(await ws.recv())
                    if frame["type"] == "sent":
                        seqs.append(frame["seq"])
            assert seqs == sorted(seqs)  # one socket's sends keep their order
            return seqs

        async def http_sender(key, to, tag):
            # Separate requests run on separate threads: real races on the row lock.
            # (8 at a time: each request holds a PostgreSQL connection of its own.)
            async with httpx.AsyncClient(base_url=server.base, headers={"Authorization": f"Bearer {key}"},
                                         timeout=30, limits=httpx.Limits(max_connections=8)) as http:
                responses = await asyncio.gather(*[
                    http.post("/api/chat/messages",
                              json={"to": to, "client_msg_id": f"{tag}-{i}", "body": tag})
                    for i in range(http_per_side)])
            assert all(r.status_code == 201 for r in responses), [r.text for r in responses][:2]
            return [r.json()["seq"] for r in responses]

        jobs = [ws_sender(akey, bob.pk, f"wa{s}") for s in range(sockets_per_side)]
        jobs += [ws_sender(bkey, alice.pk, f"wb{s}") for s in range(sockets_per_side)]
        jobs += [http_sender(akey, bob.pk, "ha"), http_sender(bkey, alice.pk, "hb")]
        results = await asyncio.gather(*jobs)

    total = 2 * (per_socket * sockets_per_side + http_per_side)
    seqs = sorted(s for r in results for s in r)
    assert seqs == list(range(1, total + 1))
    stored = await db(lambda: list(Message.objects.order_by("seq").values_list("seq", flat=True)))()
    assert stored == list(range(1, total + 1))


@pytest.mark.django_db(transaction=True)
def test_should_number_sends_racing_in_threads_without_gaps(pair, settings):
    """The service itself under thread races (no server serialising anything)."""
    settings.CHAT_SEND_BURST = 10_000
    (alice, _), (bob, _) = pair
    errors, threads = [], []

    def worker(sender, to, tag):
        from django.db import connection

        try:
            for i in range(40):
                services.message_send(sender=sender, recipient_id=to.pk, client_msg_id=f"{tag}-{i % 30}",
                                      body=tag)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    for n in range(4):
        threads.append(threading.Thread(target=worker, args=(alice, bob, f"a{n}")))
        threads.append(threading.Thread(target=worker, args=(bob, alice, f"b{n}")))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    # 8 threads x 30 distinct ids (each retried), one message each, seqs 1..240.
    assert list(Message.objects.order_by("seq").values_list("seq", flat=True)) == list(range(1, 241))
    inbox = list(InboxEntry.objects.filter(user=bob).order_by("inbox_seq").values_list("inbox_seq", "seq"))
    assert [i for i, _ in inbox] == list(range(1, len(inbox) + 1))
    assert [s for _, s in inbox] == sorted(s for _, s in inbox)
