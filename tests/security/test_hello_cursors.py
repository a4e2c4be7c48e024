"""L: a chat `hello`'s per-conversation cursors are bounded (CHAT_HELLO_MAX_CURSORS)
and each is checked (a conversation id, a sequence number in range) before any
read; the reads they cost are batched, not one query per cursor."""

import pytest
from channels.db import database_sync_to_async as db

from chat import selectors, services
from core import adb
from tests.chat.helpers import connect, recv, recv_type
from tests.factories import ApiKeyFactory, UserFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture(autouse=True)
def _channel_layer_per_test():
    """A channel layer per test (each its own loop), as in tests/chat/conftest.py."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()


@pytest.fixture(autouse=True)
async def _close_async_db_pool():
    yield
    await adb.close()


async def _error(comm) -> dict:
    frame = await recv_type(comm, "error")
    await comm.send_json_to({"type": "heartbeat"})  # and the socket still serves
    assert (await recv_type(comm, "heartbeat_ok"))["type"] == "heartbeat_ok"
    return frame


async def test_should_refuse_more_cursors_than_the_limit_with_a_coded_error(settings):
    settings.CHAT_HELLO_MAX_CURSORS = 3
    erin = await db(UserFactory)(username="erin")
    _, raw = await db(ApiKeyFactory.create_with_raw)(user=erin)
    comm = await connect(raw)
    await comm.send_json_to({"type": "hello", "cursors": {str(i): 0 for i in range(1, 5)}})
    frame = await _error(comm)
    assert frame["code"] == "too_many_cursors" and frame["field"] == "cursors"
    assert (frame["limit"], frame["max_cursors"]) == ("CHAT_HELLO_MAX_CURSORS", 3)
    await comm.disconnect()


async def test_should_refuse_malformed_cursors_before_reading_anything(settings):
    erin = await db(UserFactory)(username="erin")
    _, raw = await db(ApiKeyFactory.create_with_raw)(user=erin)
    comm = await connect(raw)
    bad = [["1", "2"], "1:2", 5, {"0": 1}, {"-1": 1}, {"1.5": 1}, {"abc": 1}, {"9" * 20: 1},
           {"1": -1}, {"1": "3"}, {"1": 1.5}, {"1": True}, {"1": 2**63}, {"1": None}]
    for cursors in bad:
        await comm.send_json_to({"type": "hello", "cursors": cursors})
        frame = await _error(comm)
        assert (frame["code"], frame["field"]) == ("invalid_cursor", "cursors"), cursors
    await comm.disconnect()


async def test_should_honour_every_cursor_across_query_batches(monkeypatch):
    """Three conversations, cursors read two to a query: the third's cursor (in
    the second query) is what starts the catch-up early."""
    monkeypatch.setattr(selectors, "CURSORS_PER_QUERY", 2)
    erin = await db(UserFactory)(username="erin")
    peers = [await db(UserFactory)(username=f"peer{i}") for i in range(3)]
    _, raw = await db(ApiKeyFactory.create_with_raw)(user=erin)
    convs = []
    for round_ in range(2):  # inbox: p0 s1, p1 s1, p2 s1, p0 s2, p1 s2, p2 s2
        for i, peer in enumerate(peers):
            msg, _ = await db(services.message_send)(sender=peer, recipient_id=erin.pk,
                                                     client_msg_id=f"{round_}-{i}", body=f"{round_}-{i}")
            convs.append(msg.conversation_id)
    await db(services.inbox_mark_delivered)(user=erin, upto=6)  # acked: only cursors ask for more

    comm = await connect(raw, hello={"cursors": {str(convs[0]): 2, str(convs[1]): 2, str(convs[2]): 0}})
    got = []
    while (frame := await recv(comm))["type"] != "synced":
        if frame["type"] == "message":
            got.append((frame["conversation"], frame["seq"]))
    assert got == [(convs[2], 1), (convs[2], 2)]
    await comm.disconnect()
