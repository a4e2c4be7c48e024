"""Websockets end when access ends.

A signed-in socket lives on after the request that opened it, so ending access
must reach it in whatever server process holds it. Every user socket joins its
user's access group (``access_group``); when access ends, ``access_ended`` sends
an ``access.ended`` event to that group once the change commits, and each socket
it concerns closes with CLOSE_CODE:

- logout (Django's user_logged_out): the sockets of that browser session;
- a password change, deactivation (is_active False) or deletion: all the user's
  sockets (session or API key);
- an API key revoked: the sockets opened with that key.

The event is best effort (the channel layer is at-most-once), so each process
also re-checks its sockets every CHAT_ACCESS_RECHECK_SECONDS (``ended``: one
batched read per table for all of them) and closes those whose access is gone.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from importlib import import_module

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore as DbSessionStore
from django.utils import timezone

from core.commit import after_commit

from .models import ApiKey

logger = logging.getLogger(__name__)
# The close code of a socket whose access ended (and of one refused for want of a
# signed-in user): sign in again. The close frame's reason says why (REASONS).
CLOSE_CODE = 4401
LOGOUT, PASSWORD_CHANGED, DEACTIVATED, DELETED, KEY_REVOKED = (
    "logout", "password_changed", "deactivated", "deleted", "key_revoked")
REASONS = (LOGOUT, PASSWORD_CHANGED, DEACTIVATED, DELETED, KEY_REVOKED)


def access_group(user_id: int) -> str:
    return f"access.user.{user_id}"


def session_digest(session_key: str) -> str:
    """What events name a session by: never the key itself, which Redis would hold."""
    return hashlib.sha256(session_key.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class SocketAccess:
    """What a socket was let in by: its user and either a session or an API key."""

    user_id: int
    auth_hash: str  # the user's session auth hash at connect: changes with the password
    session_key: str | None = None
    key_id: int | None = None

    @classmethod
    def of(cls, scope) -> SocketAccess:
        user, key = scope["user"], scope.get("api_key")
        session = scope.get("session") if key is None else None
        return cls(user_id=user.pk, auth_hash=user.get_session_auth_hash(),
                   session_key=getattr(session, "session_key", None), key_id=key.pk if key else None)

    def ended_by(self, event: dict) -> bool:
        """Whether an access.ended event concerns this socket."""
        if event.get("session") is not None:
            return self.session_key is not None and session_digest(self.session_key) == event["session"]
        if event.get("key") is not None:
            return self.key_id == event["key"]
        return True


def access_ended(user_id: int, reason: str, *, session_key: str | None = None,
                 key_id: int | None = None) -> None:
    """Closes the user's sockets that the change concerns (all of them without a
    session or key), in every server process, once the current transaction commits."""
    event = {"type": "access.ended", "reason": reason,
             "session": session_digest(session_key) if session_key else None, "key": key_id}
    after_commit(_send, access_group(user_id), event)


def _send(group: str, event: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, event)
    except Exception:  # noqa: BLE001 - the change stands; the sockets' re-check closes them
        logger.warning("access.ended to %s failed", group, exc_info=True)


def ended(accesses: list[SocketAccess]) -> dict[SocketAccess, str]:
    """The accesses that no longer hold, with why: the user gone or inactive, the
    password changed, the session gone (logged out or expired), the key revoked."""
    User = get_user_model()
    users = {u.pk: u for u in User.objects.filter(pk__in={a.user_id for a in accesses})
             .only("pk", "is_active", "password")}
    sessions = _live_sessions({a.session_key for a in accesses if a.session_key})
    keys = set(ApiKey.objects.filter(pk__in={a.key_id for a in accesses if a.key_id},
                                     revoked_at__isnull=True).values_list("pk", flat=True))
    out = {}
    for access in accesses:
        user = users.get(access.user_id)
        if user is None or not user.is_active:
            out[access] = DELETED if user is None else DEACTIVATED
        elif user.get_session_auth_hash() != access.auth_hash:
            out[access] = PASSWORD_CHANGED
        elif access.key_id is not None and access.key_id not in keys:
            out[access] = KEY_REVOKED
        elif access.key_id is None and access.session_key not in sessions:
            out[access] = LOGOUT
    return out


def _live_sessions(session_keys: set[str]) -> set[str]:
    store = import_module(settings.SESSION_ENGINE).SessionStore
    if issubclass(store, DbSessionStore):  # db and cached_db: one query
        model = store.get_model_class()
        return set(model.objects.filter(session_key__in=session_keys, expire_date__gt=timezone.now())
                   .values_list("session_key", flat=True))
    return {key for key in session_keys if store().exists(key)}


# --- where access ends (connected in AccountsConfig.ready) ------------------


def on_logged_out(sender, request, user, **kwargs):
    """user_logged_out: before the session is flushed, so its key is still known."""
    session_key = getattr(getattr(request, "session", None), "session_key", None)
    if user is not None and session_key:
        access_ended(user.pk, LOGOUT, session_key=session_key)


def on_user_saved(sender, instance, update_fields=None, **kwargs):
    """pre_save of users: a new password or is_active turned off ends every socket."""
    if instance.pk is None:
        return
    if update_fields is not None and not {"password", "is_active"} & set(update_fields):
        return
    before = type(instance).objects.filter(pk=instance.pk).values("password", "is_active").first()
    if before is None:
        return
    if before["is_active"] and not instance.is_active:
        access_ended(instance.pk, DEACTIVATED)
    elif before["password"] != instance.password:
        access_ended(instance.pk, PASSWORD_CHANGED)


def on_user_deleted(sender, instance, **kwargs):
    access_ended(instance.pk, DELETED)


def on_key_saved(sender, instance, **kwargs):
    """post_save of API keys: a revoked key's sockets close."""
    if instance.revoked_at is not None:
        access_ended(instance.user_id, KEY_REVOKED, key_id=instance.pk)
