"""Reads for chat: catch-up, history, conversation list, contacts, blocks."""

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import BooleanField, Count, Max, Min, Q
from django.db.models.expressions import RawSQL

from core import adb
from core.error_codes import DomainError
from core.ids import parse_uint

from .models import Block, ChatProfile, Conversation, InboxEntry, Message

User = get_user_model()
# A hello's per-conversation cursors are read this many to a query (SQLite's
# expression depth bounds one query's OR-ed conditions).
CURSORS_PER_QUERY = 100


def message_payload(message: Message, *, inbox_seq: int | None = None, kind: str = "message") -> dict:
    """A message as every client sees it. `kind` says what the inbox entry carrying
    it is about (its arrival, an edit or the deletion); the fields are the current
    state either way."""
    return {
        "id": message.pk,
        "conversation": message.conversation_id,
        "seq": message.seq,
        "sender": message.sender_id,
        "client_msg_id": message.client_msg_id,
        "body": message.body,
        "created_at": message.created_at.isoformat(),
        "edited_at": message.edited_at.isoformat() if message.edited_at else None,
        "deleted": message.deleted_at is not None,
        "version": message.version,
        "inbox_seq": inbox_seq,
        "kind": kind,
    }


def block_exists_between(*, user_a_id: int, user_b_id: int) -> bool:
    return Block.objects.filter(
        Q(blocker_id=user_a_id, blocked_id=user_b_id) | Q(blocker_id=user_b_id, blocked_id=user_a_id)
    ).exists()


def access_conversation(*, user, conversation_id) -> Conversation:
    """The conversation if `user` is in it; a stranger gets 404, as for any id."""
    number = parse_uint(conversation_id)
    conv = Conversation.objects.filter(pk=number).first() if number is not None else None
    if conv is None or not conv.has_member(user.pk):
        raise _no_such_conversation()
    return conv


def _no_such_conversation() -> DomainError:
    return DomainError("No such conversation.", code="unknown_conversation",
                       field="conversation")


def inbox_head(*, user_id: int) -> int:
    return ChatProfile.objects.filter(user_id=user_id).values_list("inbox_seq", flat=True).first() or 0


async def inbox_head_async(*, user_id: int) -> int:
    """inbox_head on the caller's loop (PostgreSQL, core.adb)."""
    row = await adb.fetchone(f"SELECT inbox_seq FROM {ChatProfile._meta.db_table} WHERE user_id = %s",
                             (user_id,))
    return row[0] if row else 0


def catchup_start(*, user, since: int | None, cursors: dict[int, int]) -> int:
    """The inbox cursor to stream from. Without `since`, start at the oldest entry
    not yet acked, or earlier where a per-conversation cursor asks for more."""
    head = inbox_head(user_id=user.pk)
    if since is not None:
        if since > head:
            raise DomainError(f"Cursor since={since} is ahead of your inbox ({head}).",
                              code="cursor_from_future", field="since")
        return since
    candidates = []
    oldest_undelivered = (InboxEntry.objects.filter(user=user, delivered_at__isnull=True)
                          .order_by("inbox_seq").values_list("inbox_seq", flat=True).first())
    if oldest_undelivered is not None:
        candidates.append(oldest_undelivered - 1)
    items = list(cursors.items())
    for start in range(0, len(items), CURSORS_PER_QUERY):
        after_cursor = Q()
        for conv_id, seq in items[start:start + CURSORS_PER_QUERY]:
            after_cursor |= Q(conversation_id=conv_id, seq__gt=seq)
        first = InboxEntry.objects.filter(after_cursor, user=user).aggregate(m=Min("inbox_seq"))["m"]
        if first is not None:
            candidates.append(first - 1)
    return min(candidates) if candidates else head


def check_cursors(*, user, cursors: dict[int, int]) -> None:
    """Each cursor names a conversation of the user's and no seq beyond its last (one read)."""
    convs = Conversation.objects.in_bulk(list(cursors))
    for conv_id, seq in cursors.items():
        conv = convs.get(conv_id)
        if conv is None or not conv.has_member(user.pk):
            raise _no_such_conversation()
        if seq > conv.last_seq:
            raise DomainError(f"Cursor {seq} for conversation {conv_id} is ahead of it ({conv.last_seq}).",
                              code="cursor_from_future", field="cursors")


def inbox_after(*, user, after: int, limit: int, cursors: dict[int, int] | None = None) -> list[dict]:
    """Inbox entries after the cursor in inbox order (which keeps each conversation
    in seq order), skipping what per-conversation cursors say the client has."""
    entries = (InboxEntry.objects.filter(user=user, inbox_seq__gt=after)
               .select_related("message").order_by("inbox_seq")[:limit])
    out = []
    for entry in entries:
        payload = message_payload(entry.message, inbox_seq=entry.inbox_seq, kind=entry.kind)
        # The client has this arrival; still advances the cursor. An edit or a
        # deletion is sent anyway: per-conversation cursors count arrivals only.
        arrival = entry.kind == InboxEntry.Kind.MESSAGE
        if cursors and arrival and entry.seq <= cursors.get(entry.conversation_id, 0):
            payload["skip"] = True
        out.append(payload)
    return out


def message_history(*, conversation: Conversation, before: int | None, limit: int) -> list[dict]:
    qs = Message.objects.filter(conversation=conversation)
    if before is not None:
        qs = qs.filter(seq__lt=before)
    return [message_payload(m) for m in qs.order_by("-seq")[:limit]]


def peer_read_upto(*, conversation: Conversation, reader_id: int) -> int:
    return (InboxEntry.objects.filter(user_id=reader_id, conversation=conversation, read_at__isnull=False)
            .aggregate(m=Max("seq"))["m"] or 0)


def conversation_list(*, user) -> list[dict]:
    convs = list(Conversation.objects.filter(Q(user_low=user) | Q(user_high=user))
                 .order_by("-last_message_at", "-pk"))
    peers = {u.pk: u for u in User.objects.filter(pk__in=[c.peer_id(user.pk) for c in convs])}
    unread = unread_counts(user_id=user.pk)
    out = []
    for conv in convs:
        peer_id = conv.peer_id(user.pk)
        last = Message.objects.filter(conversation=conv).order_by("-seq").first()
        out.append({
            "id": conv.pk,
            "peer": {"id": peer_id, "username": peers[peer_id].username},
            "last_seq": conv.last_seq,
            "last_message": message_payload(last) if last else None,
            "unread": unread.get(conv.pk, 0),
            "peer_read_upto": peer_read_upto(conversation=conv, reader_id=peer_id),
        })
    return out


def _unread(user_id: int):
    # Arrivals not read yet, minus messages deleted since (a tombstone is nothing to read).
    return InboxEntry.objects.filter(user_id=user_id, read_at__isnull=True, kind=InboxEntry.Kind.MESSAGE,
                                     message__deleted_at__isnull=True)


def unread_counts(*, user_id: int) -> dict[int, int]:
    """{conversation id: unread messages}, conversations with none left out."""
    rows = _unread(user_id).values("conversation_id").annotate(n=Count("id"))
    return {row["conversation_id"]: row["n"] for row in rows}


def unread_summary(*, user_id: int) -> dict:
    """The navigation badge's numbers: what /api/chat/unread answers and the badge
    socket pushes ({"total", "conversations": {id as text: count}})."""
    counts = unread_counts(user_id=user_id)
    return {"total": sum(counts.values()), "conversations": {str(k): v for k, v in counts.items()}}


def username_of(*, user_id: int) -> str | None:
    return User.objects.filter(pk=user_id).values_list("username", flat=True).first()


def unread_in(*, user_id: int, conversation_id: int) -> int:
    return _unread(user_id).filter(conversation_id=conversation_id).count()


SEARCH_LIMIT = 30
SEARCH_MAX_QUERY = 200


def message_search(*, user, query) -> list[dict]:
    """Messages in the user's conversations matching `query`, newest first.
    PostgreSQL: full text (English stemming, web-search syntax: "quotes", -not, or)
    over the GIN index of migration 0001; SQLite: every word as a substring (LIKE).
    Deleted messages never match (their body is gone)."""
    if not isinstance(query, str) or not query.strip() or "\x00" in query:
        raise DomainError("Give words to search for in `q` (text without NUL).", code="invalid_query",
                          field="q")
    query = query.strip()
    if len(query) > SEARCH_MAX_QUERY:
        raise DomainError(f"`q` is {len(query)} characters; a search has at most {SEARCH_MAX_QUERY}.",
                          code="query_too_long", field="q")
    convs = {c.pk: c for c in Conversation.objects.filter(Q(user_low=user) | Q(user_high=user))}
    found = Message.objects.filter(conversation_id__in=list(convs), deleted_at__isnull=True)
    if connection.vendor == "postgresql":
        found = found.filter(RawSQL("to_tsvector('english', body) @@ websearch_to_tsquery('english', %s)",
                                    [query], output_field=BooleanField()))
    else:
        for word in query.split():
            found = found.filter(body__icontains=word)
    found = list(found.order_by("-created_at", "-pk")[:SEARCH_LIMIT])
    names = dict(User.objects.filter(pk__in={convs[m.conversation_id].peer_id(user.pk) for m in found})
                 .values_list("pk", "username"))
    out = []
    for m in found:
        peer = convs[m.conversation_id].peer_id(user.pk)
        out.append(dict(message_payload(m), peer={"id": peer, "username": names[peer]}))
    return out


def contact_ids(*, user_id: int) -> list[int]:
    """People whose presence this user may see: conversation peers, minus blocks
    in either direction (a blocked user cannot tell whether the blocker is online)."""
    convs = Conversation.objects.filter(Q(user_low_id=user_id) | Q(user_high_id=user_id))
    peers = {c.peer_id(user_id) for c in convs}
    hidden = set(Block.objects.filter(blocker_id=user_id).values_list("blocked_id", flat=True))
    hidden |= set(Block.objects.filter(blocked_id=user_id).values_list("blocker_id", flat=True))
    return sorted(peers - hidden)


PEOPLE_LIMIT = 20


def people_find(*, user, query) -> list[dict]:
    """People to start a chat with, by username: an exact match (anyone active), or a
    prefix among people the user shares a team or a conversation with; never a list
    of everyone. Blocks in either direction hide a user, so a user who blocked you
    looks exactly like one who does not exist."""
    from accounts.models import Membership

    if not isinstance(query, str) or not query.strip() or "\x00" in query:
        raise DomainError("Give part of a username in `q` (text without NUL).", code="invalid_query",
                          field="q")
    query = query.strip()
    limit = User._meta.get_field("username").max_length
    if len(query) > limit:
        raise DomainError(f"`q` is {len(query)} characters; a username has at most {limit}.",
                          code="query_too_long", field="q")
    teams = Membership.objects.filter(user=user).values("team_id")
    known = set(Membership.objects.filter(team_id__in=teams).values_list("user_id", flat=True))
    known |= {c.peer_id(user.pk) for c in Conversation.objects.filter(Q(user_low=user) | Q(user_high=user))}
    hidden = set(Block.objects.filter(blocker=user).values_list("blocked_id", flat=True))
    hidden |= set(Block.objects.filter(blocked=user).values_list("blocker_id", flat=True))
    found = (User.objects.filter(is_active=True)
             .filter(Q(username__iexact=query) | Q(pk__in=known - {user.pk}, username__istartswith=query))
             .exclude(pk__in=hidden | {user.pk}).order_by("username")[:PEOPLE_LIMIT])
    return [{"id": u.pk, "username": u.username, "exact": u.username.lower() == query.lower()}
            for u in found]


def blocked_ids(*, user) -> list[int]:
    return list(Block.objects.filter(blocker=user).values_list("blocked_id", flat=True))
