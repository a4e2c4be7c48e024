"""The navigation badge's websocket (/ws/chat/unread/, every signed-in page but
the chat page's): the unread total, pushed when it changes. It closes with 4401
when its access ends (accounts/socket_access.py)."""

import asyncio
import json
import logging

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async as db
from channels.generic.websocket import AsyncWebsocketConsumer

from accounts.websocket import AccessEndsMixin
from core.error_codes import DomainError
from core.errors import error_frame
from core.jsonbody import json_loads

from . import selectors
from .events import user_group
from .hub import hub
from .models import InboxEntry

logger = logging.getLogger(__name__)


class UnreadConsumer(AccessEndsMixin, AsyncWebsocketConsumer):
    """The navigation badge, live: it listens to the user's group (the chat page's
    events, nothing of its own) and pushes the unread total whenever it changes: a
    message delivered, a read on another tab or device, an unread message deleted.

    A listener only. It sets no presence (reading a prompt is not being online in
    chat), and never acks or delivers: the chat page's inbox protocol is the one path
    that moves delivered_at. Session auth only: an API-key socket is refused (the
    badge is a page's; API clients have /ws/chat/ and /api/chat/unread).

    Server frame: {"type": "unread", "total": n, "from"?: {"id", "username"}}, `from`
    when a delivery made the total grow (the notification names the sender; no body,
    see static/js/chat_badge.js). Client frame: {"type": "sync"}, answered with the
    total whether or not it changed (the page's keepalive, and its repair of a lost push).
    """

    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or self.scope.get("api_key") is not None:
            await self.close(code=4401)
            return
        self.user = user
        self.total: int | None = None  # the last total pushed
        self._recounting: asyncio.Task | None = None
        self._dirty, self._force, self._sender = False, False, None
        # Joined before the first count, so no change falls between the two.
        await self.channel_layer.group_add(user_group(user.pk), self.channel_name)
        await self.join_access_group()
        await self.accept()
        hub().join(self, presence=False)  # its tick renews our group membership
        self._recount()

    async def dispatch(self, message):
        # As ChatConsumer.dispatch (no hop to Channels' sync thread), and the group's
        # events for the chat page alone (typing, presence, echo, contacts) are ignored.
        handler = getattr(self, get_handler_name(message), None)
        if handler is not None:
            await handler(message)

    async def disconnect(self, code):
        if not hasattr(self, "user"):
            return
        hub().leave(self)
        if self._recounting is not None:
            self._recounting.cancel()
        await self.channel_layer.group_discard(user_group(self.user.pk), self.channel_name)
        await self.leave_access_group()

    async def receive(self, text_data=None, bytes_data=None):
        try:
            frame = json_loads(text_data) if text_data is not None else None
        except ValueError:
            frame = None
        if not isinstance(frame, dict) or frame.get("type") != "sync":
            # The chat socket's codes: not a JSON object, or a type this socket lacks.
            typed = isinstance(frame, dict) and isinstance(frame.get("type"), str)
            code = "unknown_type" if typed else "bad_frame"
            refusal = DomainError('This socket takes only {"type": "sync"}.', code=code)
            await self.send(text_data=json.dumps(error_frame(refusal)))
            return
        self._recount(force=True)

    async def chat_message(self, event):
        # An arrival can raise the total and a deletion lower it; an edit counts the same.
        kind = event["message"]["kind"]
        if kind != InboxEntry.Kind.EDIT:
            self._recount(sender=event["message"]["sender"] if kind == InboxEntry.Kind.MESSAGE else None)

    async def chat_read(self, event):
        if event["reader"] == self.user.pk:  # this user read on another tab or device
            self._recount()

    def _recount(self, *, sender: int | None = None, force: bool = False) -> None:
        """Counts soon, on a task of its own: events that arrive while a count runs
        make one more count, not one each (a burst of messages is two queries)."""
        self._dirty, self._force = True, self._force or force
        self._sender = sender if sender is not None else self._sender
        if self._recounting is None or self._recounting.done():
            self._recounting = asyncio.get_running_loop().create_task(self._recount_loop())

    async def _recount_loop(self) -> None:
        while self._dirty:
            sender, force = self._sender, self._force
            self._dirty, self._force, self._sender = False, False, None
            try:
                await self._push(sender=sender, force=force)
            except Exception:  # noqa: BLE001 - a failed count must not end the socket; the next event counts again
                logger.warning("unread count for user %s failed", self.user.pk, exc_info=True)

    async def _push(self, *, sender: int | None, force: bool) -> None:
        # The count is read after the event's commit (events go out on commit), from
        # the same selector as /api/chat/unread.
        total = (await db(selectors.unread_summary)(user_id=self.user.pk))["total"]
        if total == self.total and not force:
            return
        frame = {"type": "unread", "total": total}
        if sender is not None and self.total is not None and total > self.total:
            frame["from"] = {"id": sender, "username": await db(selectors.username_of)(user_id=sender)}
        self.total = total
        await self.send(text_data=json.dumps(frame))
