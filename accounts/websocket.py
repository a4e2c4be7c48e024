"""Websocket auth by API key (`Authorization: Bearer`), on top of Channels'
session auth. Browsers use their session; a key never goes in the URL (no
`?api_key=`: URLs are written to access logs). And the end of a socket's access
(AccessEndsMixin)."""

from channels.db import database_sync_to_async
from rest_framework.exceptions import AuthenticationFailed

from .authentication import api_key_lookup
from .socket_access import CLOSE_CODE, SocketAccess, access_group


@database_sync_to_async
def _user_for_key(raw: str):
    try:
        key = api_key_lookup(raw)
    except AuthenticationFailed:
        return None, None
    return key.user, key


class ApiKeyWebsocketMiddleware:
    def __init__(self, inner):
        self.inner = inner

    async def __call__(self, scope, receive, send):
        raw = None
        for name, value in scope.get("headers", []):
            if name == b"authorization" and value.lower().startswith(b"bearer "):
                raw = value[7:].decode("latin-1").strip()
        if raw:
            user, key = await _user_for_key(raw)
            if user is not None:
                scope = dict(scope, user=user, api_key=key)
        return await self.inner(scope, receive, send)


class AccessEndsMixin:
    """For a signed-in user's socket (before AsyncWebsocketConsumer in the bases):
    it joins the user's access group at connect and closes with CLOSE_CODE when
    its access ends (accounts/socket_access.py), by event or by re-check."""

    access: SocketAccess | None = None
    _access_over = False

    async def join_access_group(self) -> None:
        self.access = SocketAccess.of(self.scope)
        await self.channel_layer.group_add(access_group(self.access.user_id), self.channel_name)

    async def leave_access_group(self) -> None:
        if self.access is not None:
            await self.channel_layer.group_discard(access_group(self.access.user_id), self.channel_name)

    async def access_ended(self, event) -> None:
        if self.access is not None and self.access.ended_by(event):
            await self.end_access(event["reason"])

    async def end_access(self, reason: str) -> None:
        """Closes the socket; nothing more is sent on it (the server's disconnect,
        which runs the consumer's clean-up, follows)."""
        if not self._access_over:
            self._access_over = True
            await self.close(code=CLOSE_CODE, reason=reason)

    async def send(self, text_data=None, bytes_data=None, close=False):
        if not self._access_over:
            await super().send(text_data=text_data, bytes_data=bytes_data, close=close)
