"""Edits, deletions and unread counts over the websocket: live, and through the
inbox after a reconnect; bad changes refused with nothing stored changed."""

import pytest
from channels.db import database_sync_to_async as db

from chat import services
from chat.models import InboxEntry, Message
from tests.chat.helpers import connect, recv, recv_type, send_message

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def _change(comm, frame: dict) -> dict:
    await comm.send_json_to(frame)
    while True:
        got = await recv(comm)
        if got["type"] in ("changed", "error"):
            return got


async def _updates_until_synced(comm) -> tuple[list[dict], dict]:
    frames = []
    while True:
        frame = await recv(comm)
        if frame["type"] == "synced":
            return frames, frame
        if frame["type"] in ("message", "update"):
            frames.append(frame)


async def test_should_deliver_edits_and_deletions_live_and_after_reconnect(pair):
    (alice, akey), (bob, bkey) = pair
    a = await connect(akey, hello={})
    b = await connect(bkey, hello={})
    await recv_type(a, "synced")
    await recv_type(b, "synced")
    first = await send_message(a, bob.pk, "e1", "helo")
    second = await send_message(a, bob.pk, "e2", "second")
    arrived = [await recv_type(b, "message") for _ in range(2)]
    await b.send_json_to({"type": "ack", "upto": arrived[-1]["inbox_seq"]})

    changed = await _change(a, {"type": "edit", "id": first["id"], "body": "hello", "ref": "x"})
    assert (changed["type"], changed["ref"], changed["body"]) == ("changed", "x", "hello")
    assert changed["version"] == 1
    live = await recv_type(b, "update")
    assert (live["kind"], live["id"], live["seq"], live["body"], live["version"]) == ("edit", first["id"], 1,
                                                                                   "hello", 1)
    assert live["edited_at"] and not live["deleted"] and live["inbox_seq"] == arrived[-1]["inbox_seq"] + 1
    await b.send_json_to({"type": "ack", "upto": live["inbox_seq"]})
    await b.send_json_to({"type": "heartbeat"})
    await recv_type(b, "heartbeat_ok")
    await b.disconnect()

    # Bob is away: a second edit and a deletion wait in his inbox.
    await _change(a, {"type": "edit", "id": first["id"], "body": "hello, Bob"})
    gone = await _change(a, {"type": "delete", "id": second["id"]})
    assert (gone["deleted"], gone["body"], gone["seq"], gone["version"]) == (True, "", 2, 1)
    b = await connect(bkey, hello={"since": live["inbox_seq"]})
    missed, synced = await _updates_until_synced(b)
    assert [(f["type"], f["kind"], f["seq"], f["body"]) for f in missed] == [
        ("update", "edit", 1, "hello, Bob"), ("update", "delete", 2, "")]
    # Unread: only the message still there counts (the tombstone is nothing to read).
    assert synced["unread"] == {str(first["conversation"]): 1}
    await b.disconnect()
    # Per-conversation cursors count arrivals: the changes still come.
    b = await connect(bkey, hello={"cursors": {str(first["conversation"]): 2}})
    missed, _ = await _updates_until_synced(b)
    assert [f["kind"] for f in missed] == ["edit", "delete"]
    await b.disconnect()
    await a.disconnect()
    stored = await db(lambda: list(Message.objects.order_by("seq").values_list("seq", "body", "version")))()
    assert stored == [(1, "hello, Bob", 2), (2, "", 1)]  # the tombstone keeps its seq


async def test_should_refuse_bad_changes_and_change_nothing(pair, carol):
    (alice, akey), (bob, bkey) = pair
    carol_user, ckey = carol
    a = await connect(akey, hello={})
    b = await connect(bkey, hello={})
    c = await connect(ckey, hello={})
    sent = await send_message(a, bob.pk, "m", "mine")
    doomed = await send_message(a, bob.pk, "d", "to delete")
    assert (await _change(a, {"type": "delete", "id": doomed["id"]}))["deleted"] is True
    entries_before = await db(InboxEntry.objects.count)()

    cases = [
        (b, {"type": "edit", "id": sent["id"], "body": "not yours"}, "not_your_message"),
        (b, {"type": "delete", "id": sent["id"]}, "not_your_message"),
        (c, {"type": "edit", "id": sent["id"], "body": "stranger"}, "unknown_message"),
        (a, {"type": "edit", "id": doomed["id"], "body": "back"}, "message_deleted"),
        (a, {"type": "delete", "id": doomed["id"]}, "message_deleted"),
        (a, {"type": "edit", "id": 10**30, "body": "x"}, "unknown_message"),
        (a, {"type": "edit", "id": "1; drop", "body": "x"}, "unknown_message"),
        (a, {"type": "edit", "id": sent["id"], "body": ""}, "empty_body"),
        (a, {"type": "edit", "id": sent["id"], "body": "x" * 20_000}, "message_too_large"),
        (a, {"type": "edit", "id": sent["id"]}, "empty_body"),
    ]
    for comm, frame, code in cases:
        got = await _change(comm, frame)
        assert (got["type"], got.get("code")) == ("error", code), (frame, got)
    # A block stops edits (not deletions: you can always take a message back).
    await db(services.block_create)(blocker=bob, blocked_id=alice.pk)
    assert (await _change(a, {"type": "edit", "id": sent["id"], "body": "hi"}))["code"] == "blocked"
    msg = await db(Message.objects.get)(pk=sent["id"])
    assert (msg.body, msg.version, msg.edited_at) == ("mine", 0, None)
    assert await db(InboxEntry.objects.count)() == entries_before
    for comm in (a, b, c):
        await comm.disconnect()


async def test_should_keep_unread_counts_in_step_across_a_users_devices(pair):
    (alice, akey), (bob, bkey) = pair
    a = await connect(akey, hello={})
    phone = await connect(bkey, hello={})
    laptop = await connect(bkey, hello={})
    for comm in (a, phone, laptop):
        await recv_type(comm, "synced")
    for i in range(3):
        last = await send_message(a, bob.pk, f"u{i}", f"unread {i}")
    for comm in (phone, laptop):
        assert [(await recv_type(comm, "message"))["seq"] for _ in range(3)] == [1, 2, 3]

    # Bob reads up to 2 on his phone: the laptop hears what is left, the sender the receipt.
    await phone.send_json_to({"type": "read", "conversation": last["conversation"], "upto": 2})
    mine = await recv_type(laptop, "read")
    assert (mine["reader"], mine["upto"], mine["unread"]) == (bob.pk, 2, 1)
    receipt = await recv_type(a, "read")
    assert (receipt["reader"], receipt["upto"]) == (bob.pk, 2) and "unread" not in receipt
    await laptop.disconnect()
    laptop = await connect(bkey, hello={})
    _, synced = await _updates_until_synced(laptop)
    assert synced["unread"] == {str(last["conversation"]): 1}
    for comm in (a, phone, laptop):
        await comm.disconnect()
