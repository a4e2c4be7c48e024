"""Writes for chat. Each write commits first and publishes on commit, so the
inbox always holds what the channel layer may have lost."""


from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from core import adb
from core.commit import after_commit
from core.error_codes import DomainError
from core.ids import parse_uint
from inference_protocol.validation import InvalidInput, check_text

from . import events, realtime, selectors, send
from .models import Block, ChatProfile, InboxEntry, Message

User = get_user_model()


def check_body(body) -> str:
    if not isinstance(body, str) or not body.strip():
        raise DomainError("A message needs a non-empty text body.", code="empty_body", field="body")
    try:
        check_text(body, field="body")
    except InvalidInput as exc:
        raise DomainError(str(exc), code="invalid_unicode", field="body") from None
    if "\x00" in body:  # no database text column holds NUL
        raise DomainError("A message cannot contain a NUL character.", code="invalid_body", field="body")
    size, limit = len(body.encode()), settings.CHAT_MAX_MESSAGE_BYTES
    if size > limit:
        raise DomainError(f"Message body is {size} bytes; the limit is {limit} bytes "
                          "(CHAT_MAX_MESSAGE_BYTES).", code="message_too_large",
                          field="body", extra={"limit": "CHAT_MAX_MESSAGE_BYTES", "max_bytes": limit})
    return body


def check_client_msg_id(client_msg_id) -> str:
    if not isinstance(client_msg_id, str) or not 0 < len(client_msg_id) <= 64:
        raise DomainError("client_msg_id must be a string of 1-64 characters.", code="invalid_client_msg_id",
                          field="client_msg_id")
    return client_msg_id


def _recipient_id(recipient_id) -> int:
    number = parse_uint(recipient_id)
    if number is None:
        raise DomainError("`to` must be a user id.", code="invalid_recipient", field="to")
    return number


def _check_send(*, sender, recipient_id, client_msg_id, body) -> dict:
    """The input checks before any store is asked (send.RULES are the rest)."""
    client_msg_id = check_client_msg_id(client_msg_id)
    body = check_body(body)
    rid = _recipient_id(recipient_id)
    if rid == sender.pk:
        raise DomainError("You cannot send a message to yourself.", code="self_message", field="to")
    return {"sender_id": sender.pk, "recipient_id": rid, "client_msg_id": client_msg_id, "body": body}


def message_send(*, sender, recipient_id, client_msg_id, body) -> tuple[Message, bool]:
    """Stores a message and the recipient's inbox entry in one transaction and
    publishes after commit. Returns (message, created); a retry returns the
    original message with created=False and costs no rate token."""
    args = _check_send(sender=sender, recipient_id=recipient_id, client_msg_id=client_msg_id, body=body)
    msg, created, _ = send.run_sync(**args)
    if created:
        payload = selectors.message_payload(msg, inbox_seq=msg.inbox_seq)
        after_commit(events.publish, args["recipient_id"], {"type": "chat.message", "message": payload})
        # The sender's other tabs/devices see their own message too (no inbox cursor).
        echo = {"type": "chat.echo", "message": dict(payload, inbox_seq=None)}
        after_commit(events.publish, sender.pk, echo)
    return msg, created


async def message_send_async(*, sender, recipient_id, client_msg_id, body) -> tuple[Message, bool, int]:
    """message_send for the websocket on PostgreSQL, on the caller's event loop (see
    chat.send). It publishes nothing (the caller does, after this returns, which is
    after commit). Returns (message, created, the sender's live connections)."""
    args = _check_send(sender=sender, recipient_id=recipient_id, client_msg_id=client_msg_id, body=body)
    return await send.run_async(**args)


def message_edit(*, user, message_id, body) -> Message:
    """Replaces the body of the user's own message (marked edited); the peer's inbox
    gets an entry for it, so every device of theirs learns it, live or on catch-up."""
    return _message_change(user=user, message_id=message_id, body=check_body(body))


def message_delete(*, user, message_id) -> Message:
    """Deletes the user's own message as a tombstone: the row and its seq stay (so
    nothing renumbers), the body goes; the peer learns it through the inbox."""
    return _message_change(user=user, message_id=message_id, body=None)


def _message_change(*, user, message_id, body: str | None) -> Message:
    number = parse_uint(message_id)
    with transaction.atomic():
        # The row lock orders concurrent changes of one message (and their versions).
        msg = (Message.objects.select_for_update(of=("self",)).select_related("conversation")
               .filter(pk=number).first() if number is not None else None)
        if msg is None or not msg.conversation.has_member(user.pk):
            raise DomainError("No such message.", code="unknown_message", field="id")
        if msg.sender_id != user.pk:
            raise DomainError("Only the sender can change a message.", code="not_your_message", field="id")
        if msg.deleted_at is not None:
            raise DomainError("This message was deleted; it cannot change any more.", code="message_deleted",
                              field="id")
        peer_id = msg.conversation.peer_id(user.pk)
        if body is not None:
            if selectors.block_exists_between(user_a_id=user.pk, user_b_id=peer_id):
                raise DomainError("You cannot edit messages in this conversation while a block is in place.",
                                  code="blocked", field="id")
            if body == msg.body:
                return msg  # nothing changes: no version, no event
        allowed, retry, _ = realtime.state().take_send_token(user.pk)
        if not allowed:
            raise send.rate_limited(retry)
        now = timezone.now()
        if body is None:
            msg.body, msg.deleted_at, kind = "", now, InboxEntry.Kind.DELETE
        else:
            msg.body, msg.edited_at, kind = body, now, InboxEntry.Kind.EDIT
        msg.version += 1
        msg.save(update_fields=["body", "edited_at", "deleted_at", "version"])
        # Lock order: this message, then the peer's profile (a send takes conversation
        # then profile, never a message row): no cycle.
        inbox_seq = send.next_inbox_seq(peer_id)
        InboxEntry.objects.create(user_id=peer_id, message=msg, conversation_id=msg.conversation_id,
                                  seq=msg.seq, inbox_seq=inbox_seq, kind=kind)
        payload = selectors.message_payload(msg, inbox_seq=inbox_seq, kind=kind)
        after_commit(events.publish, peer_id, {"type": "chat.message", "message": payload})
        echo = {"type": "chat.echo", "message": dict(payload, inbox_seq=None)}
        after_commit(events.publish, user.pk, echo)
    return msg


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
        raise DomainError("`upto` must be a sequence number.", code="invalid_cursor", field="upto")
    if upto > conv.last_seq:
        raise DomainError(f"Sequence {upto} is ahead of the conversation ({conv.last_seq}).",
                          code="cursor_from_future", field="upto")
    now = timezone.now()
    with transaction.atomic():
        entries = InboxEntry.objects.filter(user=user, conversation=conv, seq__lte=upto, read_at__isnull=True)
        entries.filter(delivered_at__isnull=True).update(delivered_at=now)
        count = entries.update(read_at=now)
        if count:
            event = {"type": "chat.read", "conversation": conv.pk, "reader": user.pk, "upto": upto}
            after_commit(events.publish, conv.peer_id(user.pk), event)
            # The reader's other tabs and devices update their unread counts.
            mine = dict(event, unread=selectors.unread_in(user_id=user.pk, conversation_id=conv.pk))
            after_commit(events.publish, user.pk, mine)
    return count


def block_create(*, blocker, blocked_id) -> Block:
    number = parse_uint(blocked_id)
    blocked = User.objects.filter(pk=number).first() if number is not None else None
    if blocked is None:
        raise DomainError(f"No user with id {blocked_id}.", code="user_not_found", field="user")
    if blocked.pk == blocker.pk:
        raise DomainError("You cannot block yourself.", code="self_block", field="user")
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
        after_commit(events.publish, uid, {"type": "chat.contacts"})


def last_seen_touch(*, user_id: int) -> None:
    ChatProfile.objects.update_or_create(user_id=user_id, defaults={"last_seen_at": timezone.now()})
