"""Writes for chat. Each write commits first and publishes on commit, so the
inbox always holds what the channel layer may have lost."""

from functools import partial

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from config.errors import ApiError

from . import events, realtime, selectors
from .models import Block, ChatProfile, Conversation, InboxEntry, Message

User = get_user_model()


def check_body(body) -> str:
    if not isinstance(body, str) or not body.strip():
        raise ApiError("A message needs a non-empty text body.", code="empty_body", field="body")
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
    if isinstance(recipient_id, bool) or not isinstance(recipient_id, int | str) \
            or not str(recipient_id).isdigit():
        raise ApiError("`to` must be a user id.", code="invalid_recipient", field="to")
    return int(recipient_id)


def check_recipient(*, sender, recipient_id):
    recipient_id = _recipient_id(recipient_id)
    if recipient_id == sender.pk:
        raise ApiError("You cannot send a message to yourself.", code="self_message", field="to")
    recipient = User.objects.filter(pk=recipient_id, is_active=True).first()
    if recipient is None:
        raise ApiError(f"No user with id {recipient_id}.", code="unknown_user", status_code=404, field="to")
    pair = Q(blocker=recipient, blocked=sender) | Q(blocker=sender, blocked=recipient)
    blockers = set(Block.objects.filter(pair).values_list("blocker_id", flat=True))
    if recipient.pk in blockers:
        raise ApiError("This user does not accept messages from you.", code="blocked", status_code=403,
                       field="to")
    if sender.pk in blockers:
        raise ApiError("You blocked this user; unblock them to send.", code="you_blocked",
                       status_code=403, field="to")
    return recipient


def check_send_rate(*, user_id: int) -> None:
    allowed, retry = realtime.state().take_send_token(user_id)
    if not allowed:
        raise ApiError(f"Send rate limit reached: {settings.CHAT_SEND_RATE:g} messages/s, bursts of "
                       f"{settings.CHAT_SEND_BURST} (CHAT_SEND_RATE). Retry in {retry:.1f}s.",
                       code="rate_limited", status_code=429,
                       extra={"limit": "CHAT_SEND_RATE", "retry_after": round(retry, 3)},
                       headers={"Retry-After": str(max(1, round(retry)))})


def conversation_get_or_create(*, user_a_id: int, user_b_id: int) -> Conversation:
    low, high = sorted((user_a_id, user_b_id))
    try:
        conv, _ = Conversation.objects.get_or_create(user_low_id=low, user_high_id=high)
    except IntegrityError:  # lost the race to a concurrent first message
        conv = Conversation.objects.get(user_low_id=low, user_high_id=high)
    return conv


def _existing(sender, client_msg_id, recipient_id) -> Message | None:
    msg = Message.objects.filter(sender=sender, client_msg_id=client_msg_id).select_related(
        "conversation").first()
    if msg is not None and not msg.conversation.has_member(recipient_id):
        raise ApiError("This client_msg_id was already used for another conversation.",
                       code="client_msg_id_reused", status_code=409, field="client_msg_id")
    return msg


class _Duplicate(Exception):
    """Rolls the counters back when a concurrent retry stored the message first."""


def _bump(sql: str, params: list) -> int | None:
    # UPDATE ... RETURNING takes the row lock and bumps the counter in one round
    # trip; the lock is held to commit, so numbers are gap-free and race-free.
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return row[0] if row else None


def _next_seq(conv: Conversation, now) -> int:
    return _bump("UPDATE chat_conversation SET last_seq = last_seq + 1, last_message_at = %s "
                 "WHERE id = %s RETURNING last_seq", [now, conv.pk])


def _next_inbox_seq(user_id: int) -> int:
    seq = _bump("UPDATE chat_chatprofile SET inbox_seq = inbox_seq + 1 WHERE user_id = %s "
                "RETURNING inbox_seq", [user_id])
    if seq is None:  # first message ever to this user
        with transaction.atomic():
            ChatProfile.objects.get_or_create(user_id=user_id)
        seq = _bump("UPDATE chat_chatprofile SET inbox_seq = inbox_seq + 1 WHERE user_id = %s "
                    "RETURNING inbox_seq", [user_id])
    return seq


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
    conv = conversation_get_or_create(user_a_id=sender.pk, user_b_id=recipient.pk)
    try:
        with transaction.atomic():
            # Lock order is always conversation, then recipient profile: no deadlock cycle.
            now = timezone.now()
            seq = _next_seq(conv, now)
            inbox_seq = _next_inbox_seq(recipient.pk)
            try:
                with transaction.atomic():
                    msg = Message.objects.create(conversation=conv, seq=seq, sender=sender,
                                                 client_msg_id=client_msg_id, body=body)
            except IntegrityError:
                raise _Duplicate from None
            InboxEntry.objects.create(user=recipient, message=msg, conversation=conv, seq=seq,
                                      inbox_seq=inbox_seq)
            payload = selectors.message_payload(msg, inbox_seq=inbox_seq)
            live = {"type": "chat.message", "message": payload}
            transaction.on_commit(partial(events.publish, recipient.pk, live))
            # The sender's other tabs/devices see their own message too (no inbox cursor).
            echo = dict(payload, inbox_seq=None)
            transaction.on_commit(partial(events.publish, sender.pk, {"type": "chat.echo", "message": echo}))
    except _Duplicate:
        # A concurrent retry with this client id won; ours rolled back (no gap).
        return _existing(sender, client_msg_id, rid), False
    return msg, True


def inbox_mark_delivered(*, user, upto: int) -> int:
    return (InboxEntry.objects.filter(user=user, inbox_seq__lte=upto, delivered_at__isnull=True)
            .update(delivered_at=timezone.now()))


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
    blocked = User.objects.filter(pk=blocked_id).first() if str(blocked_id).isdigit() else None
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
