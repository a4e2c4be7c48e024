"""ASGI: every HTTP request body is bounded before the app reads it.

Django's handler reads the whole body before any view runs (spooled to a
temporary file), and DRF and ``request.read()`` read it again without a bound
when it is chunked (no Content-Length). This wraps the whole HTTP app:

- a declared Content-Length over the route's limit is a 413 at once, before
  any body byte is read;
- a body without one is counted as it arrives; passing the limit sends the 413
  while the client is still sending, tells the app the client is gone (Django
  drops the request) and closes the connection, so the rest is never read.

The limit is a setting named by the first pattern of REQUEST_BODY_LIMITS that
matches the path (read per request, so an override applies), else
REQUEST_MAX_BYTES.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.conf import settings

from core.error_codes import DomainError
from core.errors import domain_error_body

if TYPE_CHECKING:
    from core.asgi import ASGIApp, Receive, Scope, Send

DEFAULT_LIMIT = "REQUEST_MAX_BYTES"


def too_large_body(setting: str, limit: int) -> bytes:
    refusal = DomainError(f"The request body is larger than {limit} bytes ({setting}).",
                          code="request_too_large", extra={"limit": setting, "max_bytes": limit})
    return json.dumps(domain_error_body(refusal)).encode()


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server refuses a malformed length itself
    return None


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, limits: list[tuple[str, str]]) -> None:
        self.app = app
        self.limits = [(re.compile(pattern), setting) for pattern, setting in limits]

    def setting_for(self, path: str) -> str:
        for pattern, setting in self.limits:
            if pattern.fullmatch(path):
                return setting
        return DEFAULT_LIMIT

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> Any:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        setting = self.setting_for(scope["path"])
        limit: int = getattr(settings, setting)
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            return await _refuse(send, setting, limit)

        received = 0
        started = refused = False

        async def bounded_receive() -> Mapping[str, Any]:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    refused = True
                    if not started:
                        await _refuse(send, setting, limit)
                    return {"type": "http.disconnect"}  # Django: RequestAborted, no response
            return message

        async def guarded_send(message: Mapping[str, Any]) -> None:
            nonlocal started
            if refused and not started:
                return  # the 413 was the answer
            started = True
            await send(message)

        await self.app(scope, bounded_receive, guarded_send)


async def _refuse(send: Send, setting: str, limit: int) -> None:
    body = too_large_body(setting, limit)
    # Connection: close makes the server drop the connection after the answer
    # instead of reading (and discarding) the rest of the body.
    await send({"type": "http.response.start", "status": 413, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
