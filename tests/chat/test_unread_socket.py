"""The navigation badge's socket (/ws/chat/unread/): the unread total pushed live,
on the real channel layer (Redis with the services, in-memory on the embedded default)."""

import pytest
from channels.db import database_sync_to_async as db
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from chat import realtime, services
from chat.models import InboxEntry
from config.asgi import application
from tests.chat.helpers import ORIGIN, bearer, connect, recv, recv_type, send_message

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]
PATH = "/ws/chat/unread/"


@db
def _session_cookie(user) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return (b"cookie", f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
            .encode())


async def _badge(user, *, total: int = 0) -> WebsocketCommunicator:
    """A signed-in page's badge socket, after its first frame (the current total)."""
    comm = WebsocketCommunicator(application, PATH, headers=[ORIGIN, await _session_cookie(user)])
    connected, _ = await comm.connect(timeout=10)
    assert connected
    assert await recv(comm) == {"type": "unread", "total": total}
    return comm


async def _send(sender, recipient, cid: str, body: str = "hi"):
    msg, _ = await db(services.message_send)(sender=sender, recipient_id=recipient.pk, client_msg_id=cid,
                                             body=body)
    return msg


async def test_should_push_the_total_and_the_sender_when_a_message_is_delivered(pair):
    (alice, _), (bob, _) = pair
    badge = await _badge(bob)
    await _send(alice, bob, "m1")
    assert await recv(badge) == {"type": "unread", "total": 1, "from": {"id": alice.pk, "username": "alice"}}
    await _send(alice, bob, "m2")
    assert (await recv(badge))["total"] == 2
    # A listener only: nothing was acked or delivered, and it is in no one's presence.
    assert await db(InboxEntry.objects.filter(user=bob, delivered_at__isnull=False).count)() == 0
    assert await realtime.state().online([bob.pk]) == {bob.pk: False}
    a = await connect(pair[0][1], hello={})
    assert await recv_type(a, "presence") == {"type": "presence", "user": bob.pk, "online": False}
    await a.disconnect()
    await badge.disconnect()


async def test_should_start_from_the_stored_total_and_count_a_burst_to_its_end(pair):
    (alice, _), (bob, _) = pair
    for i in range(3):
        await _send(alice, bob, f"before{i}")
    badge = await _badge(bob, total=3)
    for i in range(20):
        await _send(alice, bob, f"burst{i}")
    # Counts coalesce (fewer frames than messages may come), never go back, and end at the truth.
    totals = [(await recv(badge))["total"]]
    while totals[-1] < 23:
        totals.append((await recv(badge))["total"])
    assert totals == sorted(set(totals)) and totals[-1] == 23
    await badge.disconnect()


async def test_should_push_the_total_when_the_user_reads_on_another_device(pair):
    (alice, akey), (bob, bkey) = pair
    a = await connect(akey, hello={})
    for i in range(3):
        last = await send_message(a, bob.pk, f"r{i}", f"read me {i}")
    badge = await _badge(bob, total=3)
    phone = await connect(bkey, hello={})
    await phone.send_json_to({"type": "read", "conversation": last["conversation"], "upto": 2})
    assert await recv(badge) == {"type": "unread", "total": 1}
    await db(services.conversation_mark_read)(user=bob, conversation_id=last["conversation"], upto=3)
    assert await recv(badge) == {"type": "unread", "total": 0}
    for comm in (a, phone, badge):
        await comm.disconnect()


async def test_should_push_the_total_when_an_unread_message_is_deleted_and_not_for_an_edit(pair):
    (alice, _), (bob, _) = pair
    first = await _send(alice, bob, "d1", "typo")
    second = await _send(alice, bob, "d2", "take back")
    badge = await _badge(bob, total=2)
    await db(services.message_edit)(user=alice, message_id=first.pk, body="fixed")
    await db(services.message_delete)(user=alice, message_id=second.pk)
    # The edit changed no count, so the deletion's is the next frame (and names no sender).
    assert await recv(badge) == {"type": "unread", "total": 1}
    await badge.disconnect()


async def test_should_answer_sync_with_the_total_and_a_bad_frame_with_an_error(pair):
    (alice, _), (bob, _) = pair
    await _send(alice, bob, "s1")
    badge = await _badge(bob, total=1)
    await badge.send_json_to({"type": "sync"})
    assert await recv(badge) == {"type": "unread", "total": 1}  # unchanged, answered anyway
    for raw, code in (("not json{", "bad_frame"), ("[1]", "bad_frame"), ('{"type": "send"}', "unknown_type")):
        await badge.send_to(text_data=raw)
        frame = await recv(badge)
        assert (frame["type"], frame["code"]) == ("error", code), raw
    await badge.send_json_to({"type": "sync"})
    assert await recv(badge) == {"type": "unread", "total": 1}  # still open
    await badge.disconnect()


async def test_should_refuse_a_badge_socket_without_a_session(pair):
    (alice, akey), _ = pair
    refused = [
        [ORIGIN],  # anonymous
        [ORIGIN, (b"cookie", f"{settings.SESSION_COOKIE_NAME}=forged-or-expired".encode())],
        [ORIGIN, bearer(akey)],  # an API key is not a session
        [await _session_cookie(alice)],  # no Origin (a cross-site page cannot open it either)
    ]
    for headers in refused:
        comm = WebsocketCommunicator(application, PATH, headers=headers)
        connected, _ = await comm.connect(timeout=5)
        assert not connected, headers
    in_url = WebsocketCommunicator(application, f"{PATH}?api_key={akey}", headers=[ORIGIN])
    connected, _ = await in_url.connect(timeout=5)
    assert not connected


@pytest.mark.needs_services  # reads channels_redis' group keys
async def test_should_keep_the_badge_in_its_group_through_the_hub_tick(pair):
    from channels.layers import get_channel_layer

    from chat.events import user_group
    from chat.hub import hub
    from core.redis import get_aredis

    (alice, _), (bob, _) = pair
    badge = await _badge(bob)
    key = get_channel_layer()._group_key(user_group(bob.pk))
    (member, joined), = await get_aredis().zrange(key, 0, -1, withscores=True)
    await hub().tick()  # a badge socket in the tick: renewed, and no presence asked of it
    assert await get_aredis().zscore(key, member) > joined
    await _send(alice, bob, "t1")
    assert (await recv(badge))["total"] == 1
    await badge.disconnect()
