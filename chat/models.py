"""One-to-one chat: a conversation per pair, ordered messages, per-recipient inboxes.

Delivery rests on the inbox, not on the channel layer: a message and its
recipient's InboxEntry commit together, and only then is anything published.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q


class ChatProfile(models.Model):
    """Per-user chat state. `inbox_seq` numbers the user's inbox entries without
    gaps (assigned under this row's lock), so one integer is a global cursor."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="chat_profile")
    inbox_seq = models.BigIntegerField(default=0)
    last_seen_at = models.DateTimeField(null=True, blank=True)


class Conversation(models.Model):
    """Exactly one per unordered pair: stored as (lower id, higher id)."""

    user_low = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    user_high = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # Counter for Message.seq, bumped by an upsert that holds this row's lock to commit.
    last_seq = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    last_message_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user_low", "user_high"], name="chat_one_conversation_per_pair"),
            models.CheckConstraint(condition=Q(user_low__lt=F("user_high")), name="chat_pair_ordered"),
        ]

    def peer_id(self, user_id: int) -> int:
        return self.user_high_id if user_id == self.user_low_id else self.user_low_id

    def has_member(self, user_id: int) -> bool:
        return user_id in (self.user_low_id, self.user_high_id)


class Message(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    seq = models.BigIntegerField()
    sender = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    client_msg_id = models.CharField(max_length=64)
    body = models.TextField()  # "" once deleted: a tombstone keeps its seq, so nothing renumbers
    created_at = models.DateTimeField(auto_now_add=True)
    edited_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    # Bumped by each edit and by the deletion: a client keeps the highest it has seen,
    # so a late live push cannot undo a newer state from a catch-up.
    version = models.IntegerField(default=0, db_default=0)  # db_default: chat.send inserts raw

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "seq"], name="chat_message_seq_unique"),
            # A retried send (same client id) is the same message.
            models.UniqueConstraint(fields=["sender", "client_msg_id"], name="chat_client_msg_id_unique"),
        ]


class InboxEntry(models.Model):
    """What a user's devices must learn, in order: a new message, or an edit or a
    deletion of one (which goes through the inbox too, so no device misses it)."""

    class Kind(models.TextChoices):
        MESSAGE = "message"
        EDIT = "edit"
        DELETE = "delete"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="inbox_entries")
    # Denormalised from the message so catch-up and unread counts read one table.
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")
    seq = models.BigIntegerField()
    inbox_seq = models.BigIntegerField()
    delivered_at = models.DateTimeField(null=True, blank=True)
    read_at = models.DateTimeField(null=True, blank=True)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.MESSAGE, db_default=Kind.MESSAGE)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "inbox_seq"], name="chat_inbox_seq_unique"),
            # One arrival per message; its edits and deletion are further entries.
            models.UniqueConstraint(fields=["user", "message"], condition=Q(kind="message"),
                                    name="chat_inbox_message_unique"),
        ]
        indexes = [
            models.Index(fields=["user", "conversation", "seq"], name="chat_inbox_conv_seq"),
            # Acks ("delivered up to N") and catch-up's oldest undelivered entry read
            # only the undelivered tail, not the whole inbox.
            models.Index(fields=["user", "inbox_seq"], condition=Q(delivered_at__isnull=True),
                         name="chat_inbox_undelivered"),
            # Unread counts (the navigation badge asks on every page) read only unread arrivals.
            models.Index(fields=["user", "conversation"], condition=Q(read_at__isnull=True, kind="message"),
                         name="chat_inbox_unread"),
        ]


class Block(models.Model):
    blocker = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    blocked = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["blocker", "blocked"], name="chat_block_unique"),
            models.CheckConstraint(condition=~Q(blocker=F("blocked")), name="chat_block_not_self"),
        ]
