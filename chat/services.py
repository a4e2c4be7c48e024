"""Writes for chat. Each write commits first and publishes on commit, so the
inbox always holds what the channel layer may have lost."""

from functools import partial

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from core import adb
from core.errors import ApiError
from core.ids import parse_uint
from inference_protocol.validation import InvalidInput, check_text

from . import events, realtime, selectors
from .models import Block, ChatProfile, Conversation, InboxEntry, Message

User = get_user_model()


def check_body(body) -> str:
    if not isinstance(body, str) or not body.strip():
        raise ApiError("A message needs a non-empty text body.", code="empty_body", field="body")
    try:
        check_text(body, field="body")
    except InvalidInput as exc:
        raise ApiError(str(exc), code="invalid_unicode", field="body") from None
    if "\x00" in body:  # no database text column holds NUL
        raise ApiError("A message cannot contain a NUL character.", code="invalid_body", field="body")
    size, limit = len(body.encode()), settings.CHAT_MAX_MESSAGE_BYTES
    if size > limit:
        raise ApiError(f"Message body is {size} bytes; the limit is {limit} bytes "
                       "(CHAT_MAX_MESSAGE_BYTES).", code="message_too_large", status_code=413,
                       field="body", extra={"limit": "CHAT_MAX_MESSAGE_BYTES", "max_bytes": limit})
    return body


def check_client_msg_id(client_msg_id) -> str:
    if not isinstance(client_msg_id, str) or not 0 < len(client_msg_id) <= 64:
        raise ApiError("client_msg_id must be a string of 1-64 characters.", code="invalid_client_msg_id",
                       field="client_msg_id")
    return client_msg_id


def _recipient_id(recipient_id) -> int:
    number = parse_uint(recipient_id)
    if number is None:
        raise ApiError("`to` must be a user id.", code="invalid_recipient", field="to")
    return number


def check_recipient(*, sender, recipient_id):
    recipient_id = _recipient_id(recipient_id)
    if recipient_id == sender.pk:
        raise ApiError("You cannot send a message to yourself.", code="self_message", field="to")
    # One query on the hot path: the user and both block directions.
    recipient = (User.objects.filter(pk=recipient_id, is_active=True)
                 .annotate(blocks_sender=Exists(Block.objects.filter(blocker=OuterRef("pk"), blocked=sender)),
                           blocked_by_sender=Exists(Block.objects.filter(blocker=sender,
                                                                         blocked=OuterRef("pk"))))
                 .first())
    _refuse_recipient(recipient_id, found=recipient is not None,
                      blocks_sender=recipient is not None and recipient.blocks_sender,
                      blocked_by_sender=recipient is not None and recipient.blocked_by_sender)
    return recipient


def _refuse_recipient(recipient_id: int, *, found: bool, blocks_sender: bool, blocked_by_sender: bool):
    if not found:
        raise ApiError(f"No user with id {recipient_id}.", code="unknown_user", status_code=404, field="to")
    if blocks_sender:
        raise ApiError("This user does not accept messages from you.", code="blocked", status_code=403,
                       field="to")
    if blocked_by_sender:
        raise ApiError("You blocked this user; unblock them to send.", code="you_blocked",
                       status_code=403, field="to")


def check_send_rate(*, user_id: int) -> None:
    allowed, retry = realtime.state().take_send_token(user_id)
    if not allowed:
        raise _rate_limited(retry)


def _rate_limited(retry: float) -> ApiError:
    return ApiError(f"Send rate limit reached: {settings.CHAT_SEND_RATE:g} messages/s, bursts of "
                    f"{settings.CHAT_SEND_BURST} (CHAT_SEND_RATE). Retry in {retry:.1f}s.",
                    code="rate_limited", status_code=429,
                    extra={"limit": "CHAT_SEND_RATE", "retry_after": round(retry, 3)},
                    headers={"Retry-After": str(max(1, round(retry)))})


def _existing(sender, client_msg_id, recipient_id) -> Message | None:
    msg = Message.objects.filter(sender=sender, client_msg_id=client_msg_id).select_related(
        "conversation").first()
    if msg is not None and not msg.conversation.has_member(recipient_id):
        raise ApiError("This client_msg_id was already used for another conversation.",
                       code="client_msg_id_reused", status_code=409, field="client_msg_id")
    return msg


# The counters are bumped by upserts: each takes the row lock (held to commit, so
# numbers are gap-free and race-free), creates the row on first use, and returns
# the new value, all in one round trip. Lock order is always conversation, then
# recipient profile: no deadlock cycle.
_NEXT_SEQ_SQL = """
    INSERT INTO chat_conversation (user_low_id, user_high_id, last_seq, created_at, last_message_at)
    VALUES (%s, %s, 1, %s, %s)
    ON CONFLICT (user_low_id, user_high_id) DO UPDATE
    SET last_seq = chat_conversation.last_seq + 1, last_message_at = EXCLUDED.last_message_at
    RETURNING id, last_seq
"""
_NEXT_INBOX_SEQ_SQL = """
    INSERT INTO chat_chatprofile (user_id, inbox_seq) VALUES (%s, 1)
    ON CONFLICT (user_id) DO UPDATE SET inbox_seq = chat_chatprofile.inbox_seq + 1
    RETURNING inbox_seq
"""


def _fetchone(sql: str, params: list) -> tuple:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def message_send(*, sender, recipient_id, client_msg_id, body) -> tuple[Message, bool]:
    """Stores a message and the recipient's inbox entry in one transaction and
    publishes after commit. Returns (message, created); a retry returns the
    original message with created=False and costs no rate token."""
    client_msg_id = check_client_msg_id(client_msg_id)
    body = check_body(body)
    # A retry of an accepted send is answered before any other check (idempotent).
    rid = _recipient_id(recipient_id)
    if rid != sender.pk and (msg := _existing(sender, client_msg_id, rid)) is not None:
        return msg, False
    recipient = check_recipient(sender=sender, recipient_id=rid)
    check_send_rate(user_id=sender.pk)
    low, high = sorted((sender.pk, recipient.pk))
    try:
        with transaction.atomic():
            now = timezone.now()
            conversation_id, seq = _fetchone(_NEXT_SEQ_SQL, [low, high, now, now])
            (inbox_seq,) = _fetchone(_NEXT_INBOX_SEQ_SQL, [recipient.pk])
            msg = Message.objects.create(conversation_id=conversation_id, seq=seq, sender=sender,
                                         client_msg_id=client_msg_id, body=body)
            InboxEntry.objects.create(user=recipient, message=msg, conversation_id=conversation_id, seq=seq,
                                      inbox_seq=inbox_seq)
            payload = selectors.message_payload(msg, inbox_seq=inbox_seq)
            live = {"type": "chat.message", "message": payload}
            transaction.on_commit(partial(events.publish, recipient.pk, live))
            # The sender's other tabs/devices see their own message too (no inbox cursor).
            echo = dict(payload, inbox_seq=None)
            transaction.on_commit(partial(events.publish, sender.pk, {"type": "chat.echo", "message": echo}))
    except IntegrityError:
        # A concurrent retry with this client id won; ours rolled back (no gap).
        if (msg := _existing(sender, client_msg_id, rid)) is None:
            raise
        return msg, False
    return msg, True


def _send_sql() -> str:
    t = {"user": User._meta.db_table, "block": Block._meta.db_table, "conv": Conversation._meta.db_table,
         "profile": ChatProfile._meta.db_table, "msg": Message._meta.db_table,
         "inbox": InboxEntry._meta.db_table}
    # message_send in one statement (PostgreSQL): the retry lookup, the recipient and
    # both block directions, then, only if all pass and a rate token was granted, the
    # two counter upserts, the message and the inbox entry. `box` reads from `conv`,
    # so the lock order is conversation, then recipient profile, as in message_send.
    return f"""
    WITH dup AS (
        SELECT m.id, m.conversation_id, m.seq, m.created_at, m.body, c.user_low_id, c.user_high_id
        FROM {t["msg"]} m JOIN {t["conv"]} c ON c.id = m.conversation_id
        WHERE m.sender_id = %(sender)s AND m.client_msg_id = %(cid)s
    ), peer AS (
        SELECT u.id,
            EXISTS (SELECT 1 FROM {t["block"]} b WHERE b.blocker_id = u.id AND b.blocked_id = %(sender)s)
                AS blocks_sender,
            EXISTS (SELECT 1 FROM {t["block"]} b WHERE b.blocker_id = %(sender)s AND b.blocked_id = u.id)
                AS blocked_by_sender
        FROM {t["user"]} u WHERE u.id = %(recipient)s AND u.is_active
    ), go AS (
        SELECT 1 FROM peer WHERE %(allowed)s AND NOT peer.blocks_sender AND NOT peer.blocked_by_sender
            AND NOT EXISTS (SELECT 1 FROM dup)
    ), conv AS (
        INSERT INTO {t["conv"]} (user_low_id, user_high_id, last_seq, created_at, last_message_at)
        SELECT %(low)s, %(high)s, 1, %(now)s, %(now)s FROM go
        ON CONFLICT (user_low_id, user_high_id) DO UPDATE
        SET last_seq = {t["conv"]}.last_seq + 1, last_message_at = EXCLUDED.last_message_at
        RETURNING id, last_seq
    ), box AS (
        INSERT INTO {t["profile"]} (user_id, inbox_seq) SELECT %(recipient)s, 1 FROM conv
        ON CONFLICT (user_id) DO UPDATE SET inbox_seq = {t["profile"]}.inbox_seq + 1
        RETURNING inbox_seq
    ), msg AS (
        INSERT INTO {t["msg"]} (conversation_id, seq, sender_id, client_msg_id, body, created_at)
        SELECT id, last_seq, %(sender)s, %(cid)s, %(body)s, %(now)s FROM conv
        RETURNING id, conversation_id, seq, created_at
    ), entry AS (
        INSERT INTO {t["inbox"]} (user_id, message_id, conversation_id, seq, inbox_seq)
        SELECT %(recipient)s, msg.id, msg.conversation_id, msg.seq, box.inbox_seq FROM msg, box
        RETURNING inbox_seq
    )
    SELECT peer.id IS NOT NULL, coalesce(peer.blocks_sender, false), coalesce(peer.blocked_by_sender, false),
        dup.id, dup.conversation_id, dup.seq, dup.created_at, dup.body, dup.user_low_id, dup.user_high_id,
        msg.id, msg.conversation_id, msg.seq, msg.created_at, entry.inbox_seq
    FROM (SELECT 1) AS one LEFT JOIN peer ON true LEFT JOIN dup ON true
        LEFT JOIN msg ON true LEFT JOIN entry ON true
    """


_SEND_SQL = None


async def message_send_async(*, sender, recipient_id, client_msg_id, body) -> tuple[Message, bool, int]:
    """message_send for the websocket on PostgreSQL, on the caller's event loop: one
    rate-limit round trip to Redis and one statement (one transaction) in
    PostgreSQL, no worker thread. Same rules, errors and idempotency as
    message_send; it publishes nothing (the caller does, after this returns, which
    is after commit). Returns (message, created, the sender's live connections)."""
    global _SEND_SQL
    client_msg_id = check_client_msg_id(client_msg_id)
    body = check_body(body)
    rid = _recipient_id(recipient_id)
    if rid == sender.pk:
        raise ApiError("You cannot send a message to yourself.", code="self_message", field="to")
    if _SEND_SQL is None:
        _SEND_SQL = _send_sql()
    state = realtime.state()
    allowed, retry, conns = await state.take_send_token_async(sender.pk)
    low, high = sorted((sender.pk, rid))
    params = {"sender": sender.pk, "recipient": rid, "cid": client_msg_id, "body": body, "low": low,
              "high": high, "now": timezone.now(), "allowed": allowed}
    from psycopg.errors import UniqueViolation

    for _ in range(2):
        try:
            row = await adb.fetchone(_SEND_SQL, params)
            break
        except UniqueViolation:
            # A concurrent retry with this client id won; ours rolled back (no gap):
            # the second run finds it.
            continue
    else:
        raise ApiError("The send could not be stored; retry it.", code="send_conflict", status_code=409)
    (found, blocks_sender, blocked_by_sender, dup_id, dup_conv, dup_seq, dup_at, dup_body, dup_low, dup_high,
     msg_id, conv_id, seq, created_at, inbox_seq) = row
    if msg_id is None and allowed:
        await state.take_send_token_async(sender.pk, cost=-1)  # nothing stored: give the token back
    if dup_id is not None:
        if rid not in (dup_low, dup_high):
            raise ApiError("This client_msg_id was already used for another conversation.",
                           code="client_msg_id_reused", status_code=409, field="client_msg_id")
        return Message(id=dup_id, conversation_id=dup_conv, seq=dup_seq, sender_id=sender.pk,
                       client_msg_id=client_msg_id, body=dup_body, created_at=dup_at), False, conns
    _refuse_recipient(rid, found=found, blocks_sender=blocks_sender, blocked_by_sender=blocked_by_sender)
    if not allowed:
        raise _rate_limited(retry)
    msg = Message(id=msg_id, conversation_id=conv_id, seq=seq, sender_id=sender.pk,
                  client_msg_id=client_msg_id, body=body, created_at=created_at)
    msg.inbox_seq = inbox_seq
    return msg, True, conns


def inbox_mark_delivered(*, user, upto: int) -> int:
    return (InboxEntry.objects.filter(user=user, inbox_seq__lte=upto, delivered_at__isnull=True)
            .update(delivered_at=timezone.now()))


async def inbox_mark_delivered_async(*, user, upto: int) -> int:
    """inbox_mark_delivered on the caller's loop (PostgreSQL, core.adb): the page acks
    every message it gets, so this is on the hot path too."""
    return await adb.execute(
        f"UPDATE {InboxEntry._meta.db_table} SET delivered_at = %s"
        " WHERE user_id = %s AND inbox_seq <= %s AND delivered_at IS NULL", (timezone.now(), user.pk, upto))


def conversation_mark_read(*, user, conversation_id, upto) -> int:
    """Marks the user's entries up to `upto` read; the peer hears it live."""
    conv = selectors.access_conversation(user=user, conversation_id=conversation_id)
    if isinstance(upto, bool) or not isinstance(upto, int) or upto < 0:
        raise ApiError("`upto` must be a sequence number.", code="invalid_cursor", field="upto")
    if upto > conv.last_seq:
        raise ApiError(f"Sequence {upto} is ahead of the conversation ({conv.last_seq}).",
                       code="cursor_from_future", field="upto")
    now = timezone.now()
    with transaction.atomic():
        entries = InboxEntry.objects.filter(user=user, conversation=conv, seq__lte=upto, read_at__isnull=True)
        entries.filter(delivered_at__isnull=True).update(delivered_at=now)
        count = entries.update(read_at=now)
        if count:
            event = {"type": "chat.read", "conversation": conv.pk, "reader": user.pk, "upto": upto}
            transaction.on_commit(partial(events.publish, conv.peer_id(user.pk), event))
    return count


def block_create(*, blocker, blocked_id) -> Block:
    number = parse_uint(blocked_id)
    blocked = User.objects.filter(pk=number).first() if number is not None else None
    if blocked is None:
        raise ApiError(f"No user with id {blocked_id}.", code="unknown_user", status_code=404, field="user")
    if blocked.pk == blocker.pk:
        raise ApiError("You cannot block yourself.", code="self_block", field="user")
    with transaction.atomic():
        block, _ = Block.objects.get_or_create(blocker=blocker, blocked=blocked)
        _contacts_changed(blocker.pk, blocked.pk)
    return block


def block_delete(*, blocker, blocked_id) -> None:
    with transaction.atomic():
        if Block.objects.filter(blocker=blocker, blocked_id=blocked_id).delete()[0]:
            _contacts_changed(blocker.pk, int(blocked_id))


def _contacts_changed(*user_ids: int) -> None:
    # Connected sockets reload who may see whose presence.
    for uid in user_ids:
        transaction.on_commit(partial(events.publish, uid, {"type": "chat.contacts"}))


def last_seen_touch(*, user_id: int) -> None:
    ChatProfile.objects.update_or_create(user_id=user_id, defaults={"last_seen_at": timezone.now()})
