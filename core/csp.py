"""Content-Security-Policy on every HTML response: scripts and styles only from
our own origin (static files), plus an inline script carrying this request's
nonce (``request.csp_nonce``, for a template's ``<script nonce="...">``); no
plugins, no framing, forms and connections only to ourselves (websockets
included). Pages have no inline script or style="" attribute: a violation is a
bug (tests/e2e/test_csp_ui.py records them in Chromium)."""

from __future__ import annotations

import secrets
from typing import Any

from django.http import HttpResponseBase

from .middleware import _Middleware

HEADER = "Content-Security-Policy"


def policy(*, nonce: str, host: str) -> str:
    # 'self' covers ws:/wss: of our origin in CSP Level 3, not in every browser: say them.
    return "; ".join([
        "default-src 'self'",
        f"script-src 'self' 'nonce-{nonce}'",
        "style-src 'self'",
        "img-src 'self' data:",
        f"connect-src 'self' ws://{host} wss://{host}",
        "object-src 'none'",
        "base-uri 'self'",
        "frame-ancestors 'none'",
        "form-action 'self'",
    ])


class ContentSecurityPolicyMiddleware(_Middleware):
    def __call__(self, request: Any) -> Any:
        if self.is_async:
            return self._acall(request)
        request.csp_nonce = secrets.token_urlsafe(16)
        return self._add(request, self.get_response(request))

    async def _acall(self, request: Any) -> HttpResponseBase:
        request.csp_nonce = secrets.token_urlsafe(16)
        return self._add(request, await self.get_response(request))

    @staticmethod
    def _add(request: Any, response: HttpResponseBase) -> HttpResponseBase:
        if HEADER not in response and response.get("Content-Type", "").startswith("text/html"):
            response[HEADER] = policy(nonce=request.csp_nonce, host=request.get_host())
        return response
