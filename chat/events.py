"""Channel-layer publishing. Always called from transaction.on_commit (see
services): a subscriber must never hear of a row it cannot read yet."""

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer


def user_group(user_id: int) -> str:
    return f"chat.user.{user_id}"


def publish(user_id: int, event: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    # The live push is best effort (channels_redis is at-most-once); the inbox is
    # the record, and clients catch up from it.
    try:
        async_to_sync(layer.group_send)(user_group(user_id), event)
    except Exception:  # noqa: BLE001 - a lost push must not fail a committed send
        import logging

        logging.getLogger(__name__).warning("chat publish to user %s failed", user_id, exc_info=True)
