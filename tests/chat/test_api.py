"""HTTP API: send, history pages, conversation list, mark read, block/unblock."""

import pytest
from rest_framework.test import APIClient

from chat import services
from chat.models import Conversation, InboxEntry, Message
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def users():
    return UserFactory(username="ann"), UserFactory(username="ben")


def test_should_send_once_per_client_id_and_keep_one_conversation_per_pair(users):
    ann, ben = users
    first = _client(ann).post("/api/chat/messages", {"to": ben.pk, "client_msg_id": "k1", "body": "hi"},
                              format="json")
    again = _client(ann).post("/api/chat/messages", {"to": ben.pk, "client_msg_id": "k1", "body": "hi"},
                              format="json")
    reply = _client(ben).post("/api/chat/messages", {"to": ann.pk, "client_msg_id": "k1", "body": "yo"},
                              format="json")
    assert (first.status_code, again.status_code, reply.status_code) == (201, 200, 201)
    assert again.json()["id"] == first.json()["id"] and again.json()["duplicate"] is True
    assert reply.json()["seq"] == 2 and reply.json()["conversation"] == first.json()["conversation"]
    assert Conversation.objects.count() == 1 and Message.objects.count() == 2


def test_should_refuse_a_second_conversation_row_for_the_same_pair(users):
    from django.db import IntegrityError

    ann, ben = users
    low, high = sorted((ann.pk, ben.pk))
    Conversation.objects.create(user_low_id=low, user_high_id=high)
    with pytest.raises(IntegrityError):
        Conversation.objects.create(user_low_id=low, user_high_id=high)


def test_should_page_history_newest_first_with_before(users):
    ann, ben = users
    for i in range(7):
        services.message_send(sender=ann, recipient_id=ben.pk, client_msg_id=f"h{i}", body=f"m{i}")
    conv = Conversation.objects.get()
    page = _client(ben).get(f"/api/chat/conversations/{conv.pk}/messages?limit=3").json()
    assert [m["seq"] for m in page["results"]] == [7, 6, 5] and page["next_before"] == 5
    page = _client(ben).get(f"/api/chat/conversations/{conv.pk}/messages?limit=3&before=5").json()
    assert [m["seq"] for m in page["results"]] == [4, 3, 2]
    page = _client(ben).get(f"/api/chat/conversations/{conv.pk}/messages?limit=3&before=2").json()
    assert [m["seq"] for m in page["results"]] == [1] and page["next_before"] is None
    stranger = _client(UserFactory()).get(f"/api/chat/conversations/{conv.pk}/messages")
    assert stranger.status_code == 404 and stranger.json()["error"]["code"] == "unknown_conversation"
    for query, field in (("limit=\u00b2", "limit"), ("before=" + "9" * 5000, "before"),
                         ("before=-1", "before")):
        bad = _client(ben).get(f"/api/chat/conversations/{conv.pk}/messages?{query}")
        assert bad.status_code == 400 and bad.json()["error"]["field"] == field, query
    assert _client(ben).get(f"/api/chat/conversations/{'9' * 30}/messages").status_code == 404


def test_should_list_conversations_with_last_message_and_unread_and_mark_read(users):
    ann, ben = users
    for i in range(3):
        services.message_send(sender=ann, recipient_id=ben.pk, client_msg_id=f"u{i}", body=f"<i>{i}</i>")
    listing = _client(ben).get("/api/chat/conversations").json()["results"]
    assert listing[0]["unread"] == 3 and listing[0]["last_message"]["body"] == "<i>2</i>"
    assert listing[0]["peer"] == {"id": ann.pk, "username": "ann"}
    conv_id = listing[0]["id"]
    marked = _client(ben).post(f"/api/chat/conversations/{conv_id}/read", {"upto": 2}, format="json")
    assert marked.json() == {"marked": 2}
    assert _client(ben).get("/api/chat/conversations").json()["results"][0]["unread"] == 1
    assert _client(ann).get("/api/chat/conversations").json()["results"][0]["peer_read_upto"] == 2
    future = _client(ben).post(f"/api/chat/conversations/{conv_id}/read", {"upto": 9}, format="json")
    assert future.status_code == 400 and future.json()["error"]["code"] == "cursor_from_future"


def test_should_block_and_unblock(users):
    ann, ben = users
    assert _client(ben).post("/api/chat/blocks", {"user": ann.pk}, format="json").status_code == 201
    refused = _client(ann).post("/api/chat/messages", {"to": ben.pk, "client_msg_id": "b", "body": "hi"},
                                format="json")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "blocked"
    assert _client(ben).delete(f"/api/chat/blocks/{ann.pk}").status_code == 204
    ok = _client(ann).post("/api/chat/messages", {"to": ben.pk, "client_msg_id": "b", "body": "hi"},
                           format="json")
    assert ok.status_code == 201


def test_should_name_the_size_limit_and_store_nothing(users, settings):
    settings.CHAT_MAX_MESSAGE_BYTES = 10
    ann, ben = users
    response = _client(ann).post("/api/chat/messages", {"to": ben.pk, "client_msg_id": "s", "body": "x" * 11},
                                 format="json")
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == "message_too_large" and error["field"] == "body"
    assert "10 bytes" in error["message"]
    assert not Message.objects.exists() and not InboxEntry.objects.exists()


def test_should_rate_limit_http_sends_with_retry_after(users, settings):
    settings.CHAT_SEND_BURST, settings.CHAT_SEND_RATE = 2, 0.01
    ann, ben = users
    codes = [_client(ann).post("/api/chat/messages", {"to": ben.pk, "client_msg_id": f"r{i}", "body": "x"},
                               format="json") for i in range(3)]
    assert [r.status_code for r in codes] == [201, 201, 429]
    assert codes[2].json()["error"]["limit"] == "CHAT_SEND_RATE" and int(codes[2]["Retry-After"]) >= 1


def test_should_render_the_chat_page_for_a_signed_in_user(users, client):
    assert client.get("/chat/").status_code == 302
    client.force_login(users[0])
    page = client.get("/chat/")
    assert page.status_code == 200 and "dist/chat.js" in page.text and 'data-user-id="' in page.text


def test_should_find_people_by_exact_name_or_shared_team_and_hide_blocks_like_absence(users):
    from accounts.models import Membership, Team

    ann, ben = users
    stranger, mate, blocker = (UserFactory(username=n) for n in ("bella", "bertha", "bernard"))
    team = Team.objects.create(name="t", owner=ann)
    Membership.objects.bulk_create([Membership(team=team, user=u) for u in (ann, mate, blocker)])
    services.block_create(blocker=blocker, blocked_id=ann.pk)

    def find(q):
        response = _client(ann).get("/api/chat/people", {"q": q})
        return response.status_code, response.json()

    # A prefix finds only people ann shares a team or conversation with; never strangers.
    assert find("be") == (200, {"results": [{"id": mate.pk, "username": "bertha", "exact": False}]})
    assert find("BELLA") == (200, {"results": [{"id": stranger.pk, "username": "bella", "exact": True}]})
    # Someone who blocked ann answers exactly as a name that does not exist.
    assert find("bernard") == find("nobody-here") == (200, {"results": []})
    services.message_send(sender=ann, recipient_id=ben.pk, client_msg_id="c", body="hi")
    assert [r["username"] for r in find("b")[1]["results"]] == ["ben", "bertha"]
    for q, code in (("", "invalid_query"), ("x" * 10_000, "query_too_long"), ("a\x00b", "invalid_query")):
        status, body = find(q)
        assert status == 400 and body["error"]["code"] == code and body["error"]["field"] == "q", body


def test_should_let_only_the_sender_edit_or_delete_a_message(users):
    ann, ben = users
    stranger = UserFactory(username="cid")
    msg, _ = services.message_send(sender=ann, recipient_id=ben.pk, client_msg_id="e", body="typo")
    url = f"/api/chat/messages/{msg.pk}"
    anonymous = APIClient().patch(url, {"body": "x"}, format="json")
    assert anonymous.status_code in (401, 403)
    for who, status, code in ((ben, 403, "not_your_message"), (stranger, 404, "unknown_message")):
        for response in (_client(who).patch(url, {"body": "x"}, format="json"), _client(who).delete(url)):
            assert (response.status_code, response.json()["error"]["code"]) == (status, code)
    assert _client(ann).patch(url, {"body": ""}, format="json").status_code == 400
    edited = _client(ann).patch(url, {"body": "fixed"}, format="json").json()
    assert (edited["body"], edited["version"], edited["deleted"]) == ("fixed", 1, False)
    assert edited["edited_at"]
    gone = _client(ann).delete(url).json()
    assert (gone["body"], gone["deleted"], gone["seq"], gone["version"]) == ("", True, 1, 2)
    again = _client(ann).patch(url, {"body": "back"}, format="json")
    assert (again.status_code, again.json()["error"]["code"]) == (409, "message_deleted")
    history = _client(ben).get(f"/api/chat/conversations/{msg.conversation_id}/messages").json()["results"]
    assert [(m["seq"], m["body"], m["deleted"]) for m in history] == [(1, "", True)]
    kinds = list(InboxEntry.objects.filter(user=ben).order_by("inbox_seq").values_list("kind", flat=True))
    assert kinds == ["message", "edit", "delete"]
    # Unread counts arrivals still there: the deleted one no longer counts.
    assert _client(ben).get("/api/chat/unread").json() == {"total": 0, "conversations": {}}


def test_should_count_unread_per_conversation(users):
    ann, ben = users
    cid = UserFactory(username="cid")
    for i in range(3):
        services.message_send(sender=ann, recipient_id=ben.pk, client_msg_id=f"a{i}", body="x")
    services.message_send(sender=cid, recipient_id=ben.pk, client_msg_id="c", body="x")
    services.message_send(sender=ben, recipient_id=ann.pk, client_msg_id="b", body="mine does not count")
    unread = _client(ben).get("/api/chat/unread").json()
    listing = _client(ben).get("/api/chat/conversations").json()["results"]
    by_peer = {c["peer"]["username"]: c for c in listing}
    assert unread["conversations"] == {str(by_peer["ann"]["id"]): 3, str(by_peer["cid"]["id"]): 1}
    assert unread["total"] == 4 and by_peer["ann"]["unread"] == 3
    _client(ben).post(f"/api/chat/conversations/{by_peer['ann']['id']}/read", {"upto": 4}, format="json")
    assert _client(ben).get("/api/chat/unread").json()["total"] == 1


def test_should_search_only_your_conversations_and_refuse_a_huge_query(users):
    ann, ben = users
    cid, dee = UserFactory(username="cid"), UserFactory(username="dee")
    services.message_send(sender=ann, recipient_id=ben.pk, client_msg_id="1", body="Lunch at noon?")
    services.message_send(sender=ben, recipient_id=ann.pk, client_msg_id="2", body="noon works, see you")
    gone, _ = services.message_send(sender=ann, recipient_id=ben.pk, client_msg_id="3", body="noon is gone")
    services.message_delete(user=ann, message_id=gone.pk)
    services.message_send(sender=cid, recipient_id=dee.pk, client_msg_id="4", body="noon elsewhere")

    def search(user, q):
        response = _client(user).get("/api/chat/search", {"q": q})
        return response.status_code, response.json()

    status, body = search(ben, "NOON")
    assert status == 200
    assert [(m["body"], m["peer"]["username"]) for m in body["results"]] == [
        ("noon works, see you", "ann"), ("Lunch at noon?", "ann")]  # newest first; no tombstone
    assert [m["body"] for m in search(ben, "lunch noon")[1]["results"]] == ["Lunch at noon?"]
    assert search(cid, "lunch")[1]["results"] == []  # not cid's conversation
    for q, code in (("", "invalid_query"), ("x" * 10_000, "query_too_long"), ("a\x00b", "invalid_query")):
        status, body = search(ben, q)
        assert status == 400 and body["error"]["code"] == code and body["error"]["field"] == "q", body
