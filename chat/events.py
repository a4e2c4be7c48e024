"""Channel-layer publishing. Always called after the commit (core.commit; see
services): a subscriber must never hear of a row it cannot read yet."""

import logging
from contextvars import ContextVar

from asgiref.sync import async_to_sync
from channels.db import DatabaseSyncToAsync
from channels.layers import get_channel_layer
from django.db import close_old_connections

from .selectors import message_payload

# Set while an async caller runs a service on a worker thread (`run_then_publish`):
# publishes are collected and sent from the caller's own event loop afterwards,
# instead of each blocking the thread on a hop back to that loop.
_collected: ContextVar[list | None] = ContextVar("chat_collected_publishes", default=None)
logger = logging.getLogger(__name__)


def user_group(user_id: int) -> str:
    return f"chat.user.{user_id}"


def publish(user_id: int, event: dict) -> None:
    collected = _collected.get()
    if collected is not None:
        collected.append((user_id, event))
        return
    layer = get_channel_layer()
    if layer is None:
        return
    # The live push is best effort (channels_redis is at-most-once); the inbox is
    # the record, and clients catch up from it.
    try:
        async_to_sync(layer.group_send)(user_group(user_id), event)
    except Exception:  # noqa: BLE001 - a lost push must not fail a committed send
        logger.warning("chat publish to user %s failed", user_id, exc_info=True)


async def publish_message(msg, *, recipient_id: int, echo: bool) -> None:
    """The live push of a committed message (what message_send publishes on commit),
    from the caller's loop; `echo` for the sender's other connections."""
    payload = message_payload(msg, inbox_seq=msg.inbox_seq)
    sends = [(recipient_id, {"type": "chat.message", "message": payload})]
    if echo:
        sends.append((msg.sender_id, {"type": "chat.echo", "message": dict(payload, inbox_seq=None)}))
    await _send_all(sends)


async def _send_all(sends) -> None:
    layer = get_channel_layer()
    for user_id, event in sends if layer is not None else ():
        try:
            await layer.group_send(user_group(user_id), event)
        except Exception:  # noqa: BLE001 - as in publish(): the inbox has it
            logger.warning("chat publish to user %s failed", user_id, exc_info=True)


async def run_then_publish(func, **kwargs):
    """Runs a sync service on a worker thread (a pool, each thread its own DB
    connection; row locks keep concurrent calls correct), then sends what it
    published on commit from this event loop, in commit order."""
    collected: list = []
    token = _collected.set(collected)  # the worker thread runs in a copy of this context

    def call():
        # Django's connection lives in that copied context, which DatabaseSyncToAsync's
        # own clean-up (outside it) never sees: done here, or every call leaks one.
        try:
            return func(**kwargs)
        finally:
            close_old_connections()

    try:
        return await DatabaseSyncToAsync(call, thread_sensitive=False)()
    finally:
        _collected.reset(token)
        await _send_all(collected)
