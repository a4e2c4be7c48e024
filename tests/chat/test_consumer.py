"""The chat websocket over Channels' test communicator, with the real Redis
channel layer and PostgreSQL."""

import pytest
from channels.db import database_sync_to_async as db

from chat import services
from chat.models import InboxEntry, Message
from tests.chat.helpers import collect_until_synced, connect, recv, recv_type, send_message

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def test_should_deliver_live_and_ack_the_sender_with_the_seq(pair):
    (alice, akey), (bob, bkey) = pair
    a = await connect(akey, hello={})
    b = await connect(bkey, hello={})
    await recv_type(a, "synced")
    await recv_type(b, "synced")

    sent = await send_message(a, bob.pk, "c-1", "hello <b>bob</b>")
    assert sent["type"] == "sent" and sent["seq"] == 1 and sent["duplicate"] is False
    got = await recv_type(b, "message")
    assert (got["seq"], got["body"], got["sender"], got["inbox_seq"]) == (1, "hello <b>bob</b>", alice.pk, 1)

    await b.send_json_to({"type": "ack", "upto": got["inbox_seq"]})
    await b.send_json_to({"type": "heartbeat"})
    await recv_type(b, "heartbeat_ok")
    entry = await db(InboxEntry.objects.get)(user=bob)
    assert entry.delivered_at is not None and entry.read_at is None
    await a.disconnect()
    await b.disconnect()


async def test_should_store_one_message_for_a_retried_send(pair):
    (alice, akey), (bob, _) = pair
    a = await connect(akey, hello={})
    first = await send_message(a, bob.pk, "same-id", "once")
    again = await send_message(a, bob.pk, "same-id", "once")
    assert again["duplicate"] is True and (again["id"], again["seq"]) == (first["id"], first["seq"])
    assert await db(Message.objects.count)() == 1
    assert await db(InboxEntry.objects.count)() == 1
    await a.disconnect()


async def test_should_deliver_missed_messages_after_reconnect(pair):
    (alice, akey), (bob, bkey) = pair
    b = await connect(bkey, hello={})
    await recv_type(b, "synced")
    for i in range(3):
        await db(services.message_send)(sender=alice, recipient_id=bob.pk, client_msg_id=f"m{i}", body=f"{i}")
    first = [await recv_type(b, "message") for _ in range(3)]
    await b.disconnect()

    for i in range(3, 8):  # sent while bob is away
        await db(services.message_send)(sender=alice, recipient_id=bob.pk, client_msg_id=f"m{i}", body=f"{i}")
    b = await connect(bkey, hello={"since": first[-1]["inbox_seq"]})
    missed = await collect_until_synced(b)
    assert [m["body"] for m in missed] == ["3", "4", "5", "6", "7"]
    assert [m["seq"] for m in missed] == [4, 5, 6, 7, 8]
    await b.disconnect()

    # Without a cursor the server resends what was never acked; per-conversation cursors work too.
    b = await connect(bkey, hello={})
    assert [m["seq"] for m in await collect_until_synced(b)] == list(range(1, 9))
    await b.disconnect()
    b = await connect(bkey, hello={"cursors": {str(missed[0]["conversation"]): 6}})
    assert [m["seq"] for m in await collect_until_synced(b)] == [7, 8]
    await b.disconnect()


async def test_should_show_read_receipts_live_and_store_them(pair):
    (alice, akey), (bob, bkey) = pair
    a = await connect(akey, hello={})
    b = await connect(bkey, hello={})
    sent = await send_message(a, bob.pk, "r1", "read me")
    await recv_type(b, "message")
    await b.send_json_to({"type": "read", "conversation": sent["conversation"], "upto": sent["seq"]})
    receipt = await recv_type(a, "read")
    assert receipt == {"type": "read", "conversation": sent["conversation"], "reader": bob.pk, "upto": 1}
    entry = await db(InboxEntry.objects.get)(user=bob)
    assert entry.read_at is not None and entry.delivered_at is not None
    await a.disconnect()
    await b.disconnect()


async def test_should_relay_typing_without_storing_it(pair):
    (alice, akey), (bob, bkey) = pair
    await db(services.message_send)(sender=alice, recipient_id=bob.pk, client_msg_id="x", body="hi")
    a = await connect(akey, hello={})
    b = await connect(bkey, hello={})
    await a.send_json_to({"type": "typing", "to": bob.pk})
    assert (await recv_type(b, "typing"))["user"] == alice.pk
    assert await db(Message.objects.count)() == 1
    await a.disconnect()
    await b.disconnect()


async def test_should_announce_presence_to_contacts(pair):
    (alice, akey), (bob, bkey) = pair
    await db(services.message_send)(sender=alice, recipient_id=bob.pk, client_msg_id="x", body="hi")
    b = await connect(bkey, hello={})
    # The first frame is a snapshot of each contact's state.
    assert await recv_type(b, "presence") == {"type": "presence", "user": alice.pk, "online": False}
    a = await connect(akey, hello={})
    assert await recv_type(b, "presence") == {"type": "presence", "user": alice.pk, "online": True}
    await a.disconnect()
    assert await recv_type(b, "presence") == {"type": "presence", "user": alice.pk, "online": False}
    await b.disconnect()


async def test_should_mark_a_vanished_client_offline_within_the_ttl(pair, settings):
    from chat import realtime

    settings.CHAT_PRESENCE_TTL_SECONDS = 1
    settings.CHAT_PRESENCE_POLL_SECONDS = 0.2
    (alice, _), (bob, bkey) = pair
    await db(services.message_send)(sender=alice, recipient_id=bob.pk, client_msg_id="x", body="hi")
    # A connection of alice's on a server that then died: it heartbeated once, never closed.
    await realtime.state().heartbeat(alice.pk, "crashed-server-connection")
    b = await connect(bkey, hello={})
    assert (await recv_type(b, "presence"))["online"] is True
    offline = await recv_type(b, "presence", timeout=3)
    assert offline == {"type": "presence", "user": alice.pk, "online": False}
    await b.disconnect()


async def test_should_hide_presence_and_refuse_messages_after_a_block(pair):
    (alice, akey), (bob, bkey) = pair
    await db(services.message_send)(sender=alice, recipient_id=bob.pk, client_msg_id="x", body="hi")
    await db(services.block_create)(blocker=bob, blocked_id=alice.pk)
    b = await connect(bkey, hello={})
    a = await connect(akey, hello={})
    refused = await send_message(a, bob.pk, "y", "let me in")
    assert refused["code"] == "blocked"
    await a.send_json_to({"type": "typing", "to": bob.pk})
    assert (await recv_type(a, "error"))["code"] == "unknown_contact"
    # Alice heartbeats and sees no presence of bob; bob sees none of hers either.
    await a.send_json_to({"type": "heartbeat"})
    frame = await recv_type(a, "heartbeat_ok")
    assert frame["type"] == "heartbeat_ok"
    await b.send_json_to({"type": "heartbeat"})
    await recv_type(b, "heartbeat_ok")
    seen = [await recv(c) for c in (a, b) for _ in range(c.output_queue.qsize())]
    assert not [f for f in seen if f["type"] == "presence"], seen
    assert await db(Message.objects.count)() == 1
    await a.disconnect()
    await b.disconnect()
