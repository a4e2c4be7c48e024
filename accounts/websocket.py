"""Websocket auth by API key (`Authorization: Bearer`), on top of Channels'
session auth. Browsers use their session; a key never goes in the URL (no
`?api_key=`: URLs are written to access logs)."""

from channels.db import database_sync_to_async
from rest_framework.exceptions import AuthenticationFailed

from .authentication import api_key_lookup


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
