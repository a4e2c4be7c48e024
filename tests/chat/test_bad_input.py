"""Bad frames get an error frame with a code; the socket stays open and nothing is stored."""

import pytest
from channels.db import database_sync_to_async as db

from chat import services
from chat.models import InboxEntry, Message
from tests.chat.helpers import connect, recv_type

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def _expect_error(comm, code: str) -> dict:
    frame = await recv_type(comm, "error")
    assert frame["code"] == code, frame
    # Still connected: the next frame is served.
    await comm.send_json_to({"type": "heartbeat"})
    assert (await recv_type(comm, "heartbeat_ok"))["type"] == "heartbeat_ok"
    return frame


async def test_should_answer_each_bad_frame_with_a_coded_error_and_stay_open(pair, carol, settings):
    settings.CHAT_MAX_MESSAGE_BYTES = 100
    (alice, akey), (bob, _) = pair
    carol_user, _ = carol
    await db(services.block_create)(blocker=carol_user, blocked_id=alice.pk)
    a = await connect(akey, hello={})
    await recv_type(a, "synced")

    await a.send_to(text_data="not json{")
    await _expect_error(a, "bad_frame")
    await a.send_to(text_data="[1, 2]")
    await _expect_error(a, "bad_frame")
    await a.send_json_to({"type": "launch_missiles"})
    await _expect_error(a, "unknown_type")

    cases = [
        ({"to": alice.pk, "body": "me"}, "self_message"),
        ({"to": 999999, "body": "ghost"}, "user_not_found"),
        ({"to": carol_user.pk, "body": "hi"}, "blocked"),
        ({"to": bob.pk, "body": "x" * 101}, "message_too_large"),
        ({"to": bob.pk, "body": ""}, "empty_body"),
        ({"to": "bob", "body": "hi"}, "invalid_recipient"),
        ({"to": "\u00b2", "body": "hi"}, "invalid_recipient"),  # "²".isdigit() is True
        ({"to": "9" * 5000, "body": "hi"}, "invalid_recipient"),
        ({"to": bob.pk, "body": "nul \x00 byte"}, "invalid_body"),
        ({"to": bob.pk, "body": "lone \ud800 surrogate"}, "invalid_unicode"),
    ]
    for i, (fields, code) in enumerate(cases):
        await a.send_json_to({"type": "send", "client_msg_id": f"bad-{i}", **fields})
        frame = await _expect_error(a, code)
        assert frame["ref"] == f"bad-{i}"
    too_big = await _send_and_error(a, {"to": bob.pk, "body": "é" * 51, "client_msg_id": "multibyte"})
    assert too_big["limit"] == "CHAT_MAX_MESSAGE_BYTES" and "100 bytes" in too_big["message"]

    await a.send_json_to({"type": "hello", "since": 5})
    await _expect_error(a, "cursor_from_future")
    await a.send_json_to({"type": "ack", "upto": 3})
    await _expect_error(a, "cursor_from_future")
    await a.send_json_to({"type": "hello", "since": -1})
    await _expect_error(a, "invalid_cursor")
    await a.send_json_to({"type": "hello", "cursors": {"\u00b2": 0}})
    await _expect_error(a, "invalid_cursor")
    await a.send_json_to({"type": "hello", "since": 10**30})
    await _expect_error(a, "invalid_cursor")
    await a.send_to(text_data='{"type": "send", "body": ' + "[" * 100_000 + "]" * 100_000 + "}")
    await _expect_error(a, "json_too_deep")

    assert await db(Message.objects.count)() == 0
    assert await db(InboxEntry.objects.count)() == 0
    # And a good send still works on the same socket.
    await a.send_json_to({"type": "send", "to": bob.pk, "client_msg_id": "ok", "body": "fine"})
    assert (await recv_type(a, "sent"))["seq"] == 1
    await a.disconnect()


async def _send_and_error(comm, fields: dict) -> dict:
    await comm.send_json_to({"type": "send", **fields})
    return await _expect_error(comm, "message_too_large")


async def test_should_refuse_a_cursor_from_the_future_per_conversation(pair):
    (alice, _), (bob, bkey) = pair
    msg, _ = await db(services.message_send)(sender=alice, recipient_id=bob.pk, client_msg_id="1", body="a")
    b = await connect(bkey, hello={"cursors": {str(msg.conversation_id): 2}})
    await _expect_error(b, "cursor_from_future")
    await b.send_json_to({"type": "hello", "cursors": {"424242": 0}})
    await _expect_error(b, "unknown_conversation")
    await b.disconnect()


async def test_should_rate_limit_sends_with_an_error_naming_the_limit(pair, settings):
    settings.CHAT_SEND_BURST = 3
    settings.CHAT_SEND_RATE = 0.01
    (alice, akey), (bob, _) = pair
    a = await connect(akey, hello={})
    for i in range(3):
        await a.send_json_to({"type": "send", "to": bob.pk, "client_msg_id": f"r{i}", "body": "x"})
        assert (await recv_type(a, "sent"))["seq"] == i + 1
    await a.send_json_to({"type": "send", "to": bob.pk, "client_msg_id": "r3", "body": "x"})
    frame = await _expect_error(a, "rate_limit_exceeded")
    assert frame["limit"] == "CHAT_SEND_RATE" and frame["retry_after"] > 0
    # A retry of an accepted message is not a new send: no token, same answer.
    await a.send_json_to({"type": "send", "to": bob.pk, "client_msg_id": "r0", "body": "x"})
    assert (await recv_type(a, "sent"))["duplicate"] is True
    assert await db(Message.objects.count)() == 3
    await a.disconnect()


async def test_should_refuse_an_unauthenticated_socket(pair):
    from channels.testing import WebsocketCommunicator

    from config.asgi import application
    from tests.chat.helpers import ORIGIN, bearer

    comm = WebsocketCommunicator(application, "/ws/chat/", headers=[ORIGIN])
    connected, _ = await comm.connect(timeout=5)
    assert not connected
    no_origin = WebsocketCommunicator(application, "/ws/chat/", headers=[bearer(pair[0][1])])
    connected, _ = await no_origin.connect(timeout=5)
    assert not connected
    # A key in the URL (written to access logs) authenticates nobody.
    in_url = WebsocketCommunicator(application, f"/ws/chat/?api_key={pair[0][1]}", headers=[ORIGIN])
    connected, _ = await in_url.connect(timeout=5)
    assert not connected
