"""The chat page's websocket (/ws/chat/): catch-up from the inbox, then live;
acks, sends, typing, read receipts and presence. Thin: every rule lives in
services/selectors. (The navigation badge's socket is chat/unread.py.)

Frames are JSON objects with a `type`; each on_<type> handler documents its frame.
A socket closes with 4401 when its access ends (accounts/socket_access.py).
"""

import asyncio
import json
import logging
from functools import partial

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async as db
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from accounts.websocket import AccessEndsMixin
from core import adb
from core.error_codes import DomainError
from core.errors import error_frame
from core.ids import parse_uint
from core.jsonbody import JsonTooDeep, json_loads

from . import events, realtime, selectors, services
from .events import user_group
from .hub import hub

logger = logging.getLogger(__name__)
PUBLISH_BACKLOG = 64  # a socket's publishes in flight at most (see _publish_in_order)


def _ref(frame: dict):
    ref = frame.get("client_msg_id") or frame.get("ref")
    return ref if isinstance(ref, str | int) and not isinstance(ref, bool) else None


def _int(value, field: str, *, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if not isinstance(value, int) or parse_uint(value) is None:
        raise DomainError(f"`{field}` must be a non-negative integer.", code="invalid_cursor", field=field)
    return value


def _cursors(raw) -> dict[int, int]:
    """A hello's per-conversation cursors, {conversation id (as text: a JSON key): seq}."""
    if raw is None:
        return {}
    limit = settings.CHAT_HELLO_MAX_CURSORS
    if isinstance(raw, dict) and len(raw) > limit:
        raise DomainError(f"`cursors` names {len(raw)} conversations; a hello takes at most {limit}.",
                          code="too_many_cursors", field="cursors",
                          extra={"limit": "CHAT_HELLO_MAX_CURSORS", "max_cursors": limit})
    ids = [parse_uint(k) for k in raw] if isinstance(raw, dict) else [None]
    if not all(ids):  # not an object, or a key that is no conversation id (0 is none)
        raise DomainError("`cursors` maps conversation ids to sequence numbers.", code="invalid_cursor",
                          field="cursors")
    return {conv: _int(seq, "cursors") for conv, seq in zip(ids, raw.values(), strict=True)}


def _inbox_frame(payload: dict) -> dict:
    """An inbox entry as a frame: `message` for an arrival, `update` for an edit or
    a deletion (the client replaces the message it has; `version` orders them).
    Both carry inbox_seq and are acked alike."""
    return {"type": "message" if payload["kind"] == "message" else "update", **payload}


class ChatConsumer(AccessEndsMixin, AsyncWebsocketConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.user = user
        self.cursor: int | None = None  # last inbox_seq sent; None until `hello`
        self.cursors: dict[int, int] = {}
        self.contacts: set[int] = set()
        self.known_online: dict[int, bool] = {}
        self._publishing: asyncio.Task | None = None  # the newest of this socket's publishes
        self._publish_backlog = 0
        # Join the group before reading the inbox so nothing falls between the two.
        await self.channel_layer.group_add(user_group(user.pk), self.channel_name)
        await self.join_access_group()
        await self.accept()
        await self._load_contacts()
        await self._heartbeat()
        await self.send_json({"type": "welcome", "user": user.pk, "username": user.username,
                              "heartbeat_seconds": settings.CHAT_HEARTBEAT_SECONDS,
                              "max_message_bytes": settings.CHAT_MAX_MESSAGE_BYTES})
        await self.presence_update(await realtime.state().online(sorted(self.contacts)))
        hub().join(self)  # from now on its tick renews our group and polls presence

    async def dispatch(self, message):
        # Channels' own dispatch first hops to its one sync thread to close stale
        # database connections, for every frame and every event: under load each
        # message queues for that thread. Not needed here: the ORM calls below run
        # through database_sync_to_async, which does that on its own thread around
        # each call, and the send path uses core.adb's pool.
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def disconnect(self, code):
        if not hasattr(self, "user"):
            return
        hub().leave(self)
        await self.channel_layer.group_discard(user_group(self.user.pk), self.channel_name)
        await self.leave_access_group()
        if await realtime.state().leave(self.user.pk, self.channel_name):
            await self._announce(online=False)
        await db(services.last_seen_touch)(user_id=self.user.pk)

    async def send_json(self, frame: dict) -> None:
        await self.send(text_data=json.dumps(frame))

    async def receive(self, text_data=None, bytes_data=None):
        try:  # bounded nesting: a deeply nested frame is a bad frame, not a crash
            frame = json_loads(text_data) if text_data is not None else None
        except JsonTooDeep as exc:
            await self._error("json_too_deep", str(exc))
            return
        except ValueError:
            frame = None
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            await self._error("bad_frame", "Frames are JSON objects with a string `type`.")
            return
        handler = getattr(self, f"on_{frame['type']}", None)
        if handler is None:
            await self._error("unknown_type", f"Unknown frame type {frame['type'][:40]!r}.", field="type")
            return
        try:
            await handler(frame)
        except DomainError as exc:
            await self.send_json(error_frame(exc, ref=_ref(frame)))
        except Exception:  # a bug must not take the socket down: the client gets an error frame
            logger.exception("chat frame %r failed", frame["type"][:40])
            await self._error("server_error", "The server could not handle this frame.", ref=_ref(frame))

    async def _error(self, code: str, message: str, *, field: str | None = None, **extra):
        await self.send_json(error_frame(DomainError(message, code=code, field=field), **extra))

    # --- client frames -------------------------------------------------------

    async def on_hello(self, frame):
        """{"type": "hello", "since": inbox_seq?, "cursors": {conversation_id: seq}?}
        (at most CHAT_HELLO_MAX_CURSORS cursors)."""
        since = _int(frame.get("since"), "since", optional=True)
        cursors = _cursors(frame.get("cursors"))
        await db(selectors.check_cursors)(user=self.user, cursors=cursors)
        self.cursors = cursors
        self.cursor = await db(selectors.catchup_start)(user=self.user, since=since, cursors=cursors)
        await self._catch_up()
        # Unread counts as of the end of catch-up: right after any reconnect.
        unread = await db(selectors.unread_counts)(user_id=self.user.pk)
        await self.send_json({"type": "synced", "inbox_seq": self.cursor,
                              "unread": {str(k): v for k, v in unread.items()}})

    async def on_ack(self, frame):
        """{"type": "ack", "upto": inbox_seq}: everything up to it reached the client."""
        upto = _int(frame.get("upto"), "upto")
        if self.cursor is None or upto > self.cursor:
            raise DomainError(f"Cannot ack {upto}: only {self.cursor or 0} was sent.",
                              code="cursor_from_future", field="upto")
        if adb.enabled():
            await services.inbox_mark_delivered_async(user=self.user, upto=upto)
        else:
            await db(services.inbox_mark_delivered)(user=self.user, upto=upto)

    async def on_send(self, frame):
        """{"type": "send", "to": user_id, "client_msg_id": str, "body": str}"""
        args = {"sender": self.user, "recipient_id": frame.get("to"),
                "client_msg_id": frame.get("client_msg_id"), "body": frame.get("body")}
        if adb.enabled():
            # On this loop, no thread hop: committed when it returns, then published.
            msg, created, conns = await services.message_send_async(**args)
            if created:
                await self._publish_in_order(partial(events.publish_message, msg,
                                                     recipient_id=int(frame["to"]), echo=conns > 1))
        else:
            msg, created = await events.run_then_publish(services.message_send, **args)
        await self.send_json({"type": "sent", "client_msg_id": msg.client_msg_id, "id": msg.pk,
                              "conversation": msg.conversation_id, "seq": msg.seq,
                              "created_at": msg.created_at.isoformat(), "duplicate": not created})
        if created and int(frame["to"]) not in self.contacts:
            await self._load_contacts()

    async def _publish_in_order(self, publish) -> None:
        """Runs this socket's publishes one after another in the background, so the
        next frame need not wait for the channel layer's round trips (the message
        is committed: the inbox has it whatever happens to the push). A backlog of
        PUBLISH_BACKLOG waits for the oldest, so a stalled layer slows the socket
        instead of piling up tasks."""
        previous = self._publishing
        if previous is not None and self._publish_backlog >= PUBLISH_BACKLOG:
            await asyncio.shield(previous)
            previous = None

        async def after_previous():
            if previous is not None:
                await previous  # never raises: publish_message logs its own failures
            try:
                await publish()
            finally:
                self._publish_backlog -= 1

        self._publish_backlog += 1
        self._publishing = asyncio.get_running_loop().create_task(after_previous())

    async def on_edit(self, frame):
        """{"type": "edit", "id": message_id, "body": str, "ref"?}: answered by `changed`."""
        msg = await events.run_then_publish(services.message_edit, user=self.user, message_id=frame.get("id"),
                                            body=frame.get("body"))
        await self._changed(msg, frame)

    async def on_delete(self, frame):
        """{"type": "delete", "id": message_id, "ref"?}: answered by `changed` (a tombstone)."""
        msg = await events.run_then_publish(services.message_delete, user=self.user,
                                            message_id=frame.get("id"))
        await self._changed(msg, frame)

    async def _changed(self, msg, frame) -> None:
        await self.send_json({"type": "changed", "ref": _ref(frame), **selectors.message_payload(msg)})

    async def on_read(self, frame):
        """{"type": "read", "conversation": id, "upto": seq}"""
        await db(services.conversation_mark_read)(user=self.user, conversation_id=frame.get("conversation"),
                                                  upto=frame.get("upto"))

    async def on_typing(self, frame):
        """{"type": "typing", "to": user_id}: relayed, never stored."""
        to = frame.get("to")
        if to not in self.contacts:
            raise DomainError("Typing goes only to your contacts.", code="unknown_contact", field="to")
        await self.channel_layer.group_send(user_group(to), {"type": "chat.typing", "user": self.user.pk})

    async def on_heartbeat(self, frame):
        await self._heartbeat()
        # Also the safety net for a lost live push: catch up if the inbox moved on.
        head = (selectors.inbox_head_async if adb.enabled() else db(selectors.inbox_head))
        if self.cursor is not None and await head(user_id=self.user.pk) > self.cursor:
            await self._catch_up()
        await self.send_json({"type": "heartbeat_ok"})

    # --- channel-layer events ------------------------------------------------

    async def chat_message(self, event):
        if self.cursor is None:
            return  # before `hello`: the catch-up will read it from the inbox
        seq = event["message"]["inbox_seq"]
        if seq <= self.cursor:
            return  # already sent by a catch-up
        if seq == self.cursor + 1:
            self.cursor = seq
            await self._send_message(event["message"])
        else:
            await self._catch_up()  # a push was lost or overtaken: the inbox has it

    async def chat_echo(self, event):
        await self.send_json({"type": "echo", **event["message"]})

    async def chat_read(self, event):
        """The peer read up to `upto`, or (reader = this user) another of this
        user's devices did, with what is left unread there."""
        await self.send_json({"type": "read", **{k: v for k, v in event.items() if k != "type"}})

    async def chat_typing(self, event):
        if event["user"] in self.contacts:
            await self.send_json({"type": "typing", "user": event["user"]})

    async def chat_presence(self, event):
        if event["user"] in self.contacts:
            await self._set_presence(event["user"], event["online"])

    async def chat_contacts(self, event):
        await self._load_contacts()
        await self.presence_update(await realtime.state().online(sorted(self.contacts)))

    # --- internals -----------------------------------------------------------

    async def _send_message(self, payload: dict) -> None:
        await self.send_json(_inbox_frame(payload))
        if payload["sender"] not in self.contacts:
            await self._load_contacts()

    async def _catch_up(self) -> None:
        batch_size = settings.CHAT_CATCHUP_BATCH
        while True:
            batch = await db(selectors.inbox_after)(user=self.user, after=self.cursor, limit=batch_size,
                                                    cursors=self.cursors)
            for payload in batch:
                self.cursor = payload["inbox_seq"]
                if not payload.pop("skip", False):
                    await self.send_json(_inbox_frame(payload))
            if len(batch) < batch_size:
                return

    async def _load_contacts(self) -> None:
        self.contacts = set(await db(selectors.contact_ids)(user_id=self.user.pk))

    async def _heartbeat(self) -> None:
        if await realtime.state().heartbeat(self.user.pk, self.channel_name):
            await self._announce(online=True)
        resolution = settings.CHAT_LAST_SEEN_RESOLUTION_SECONDS
        if await realtime.state().claim(f"lastseen:{self.user.pk}", resolution):
            await db(services.last_seen_touch)(user_id=self.user.pk)

    async def _announce(self, *, online: bool) -> None:
        for uid in await db(selectors.contact_ids)(user_id=self.user.pk):
            await self.channel_layer.group_send(user_group(uid), {"type": "chat.presence",
                                                                  "user": self.user.pk, "online": online})

    async def _set_presence(self, uid: int, online: bool) -> None:
        if self.known_online.get(uid) != online:
            self.known_online[uid] = online
            await self.send_json({"type": "presence", "user": uid, "online": online})

    async def presence_update(self, online: dict[int, bool]) -> None:
        """Presence read for (at least) our contacts: finds contacts that vanished
        (TTL ran out) and ones now hidden by a block. Called by the hub's tick."""
        for uid in [u for u in self.known_online if u not in self.contacts]:
            if self.known_online.pop(uid):
                await self.send_json({"type": "presence", "user": uid, "online": False})
        for uid in sorted(self.contacts):
            await self._set_presence(uid, online.get(uid, False))
