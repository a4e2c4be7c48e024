"""One housekeeping task per server process (per event loop) for all its chat sockets
(the chat page's and the navigation badge's).

Every CHAT_PRESENCE_POLL_SECONDS it
- renews each socket's membership of its user's groups (chat and access). The
  channel layer drops a membership not renewed within CHANNEL_LAYER_GROUP_EXPIRY,
  so the channels of a server killed -9 (which never ran `disconnect`) leave their groups within that
  time instead of channels_redis' default day, and messages stop going to them;
- reads the presence of every contact of every chat-page socket in one round trip
  and hands each socket its part (one poll per process, not one per socket);
- every CHAT_ACCESS_RECHECK_SECONDS, re-checks that every socket's access still
  holds (one batched read) and closes those whose ended: the safety net for a
  lost access.ended event (accounts/socket_access.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from accounts.socket_access import access_group, ended

from . import realtime
from .events import user_group

logger = logging.getLogger(__name__)
_hubs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class Hub:
    def __init__(self):
        self.sockets: dict = {}  # socket -> whether it shows presence (has contacts, presence_update)
        self._task: asyncio.Task | None = None
        self._recheck_at = 0.0  # monotonic time of the next access re-check

    def join(self, consumer, *, presence: bool = True) -> None:
        self.sockets[consumer] = presence
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def leave(self, consumer) -> None:
        self.sockets.pop(consumer, None)

    async def _run(self) -> None:
        while self.sockets:
            await asyncio.sleep(settings.CHAT_PRESENCE_POLL_SECONDS)
            try:
                await self.tick()
            except Exception:  # noqa: BLE001 - keep going through a Redis blip
                logger.warning("chat housekeeping tick failed", exc_info=True)

    async def tick(self) -> None:
        sockets = [s for s in self.sockets if getattr(s, "user", None) is not None]
        await renew_groups([(group, s.channel_name) for s in sockets
                            for group in (user_group(s.user.pk), access_group(s.user.pk))])
        watching = [s for s in sockets if self.sockets.get(s)]
        contacts = sorted({uid for s in watching for uid in s.contacts})
        online = await realtime.state().online(contacts)
        for s in watching:
            if s in self.sockets:
                await s.presence_update(online)
        if time.monotonic() >= self._recheck_at:
            self._recheck_at = time.monotonic() + settings.CHAT_ACCESS_RECHECK_SECONDS
            await self.recheck_access(sockets)

    async def recheck_access(self, sockets: list) -> None:
        sockets = [s for s in sockets if s.access is not None]
        gone = await database_sync_to_async(ended)([s.access for s in sockets])
        for s in sockets:
            if s.access in gone:
                await s.end_access(gone[s.access])


def hub() -> Hub:
    loop = asyncio.get_running_loop()
    found = _hubs.get(loop)
    if found is None:
        found = _hubs[loop] = Hub()
    return found


async def renew_groups(memberships: list[tuple[str, str]]) -> None:
    """group_add for many (group, channel) pairs: one pipeline on channels_redis."""
    layer = get_channel_layer()
    if layer is None or not memberships:
        return
    if not hasattr(layer, "_group_key"):  # the in-memory layer
        for group, channel in memberships:
            await layer.group_add(group, channel)
        return
    # channels_redis' group_add is ZADD {channel: now} + EXPIRE group_expiry on the
    # group's key; the same here, batched per Redis host.
    now, by_host = time.time(), {}
    for group, channel in memberships:
        by_host.setdefault(layer.consistent_hash(group), []).append((layer._group_key(group), channel))
    for index, pairs in by_host.items():
        async with layer.connection(index).pipeline(transaction=False) as pipe:
            for key, channel in pairs:
                pipe.zadd(key, {channel: now})
                pipe.expire(key, layer.group_expiry)
            await pipe.execute()
