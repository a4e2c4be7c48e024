"""Refusals answered from memory: once an API key's requests-per-minute bucket
refuses it, this process refuses that key's generation calls again until the
refusal's Retry-After has passed, before Django, the key cache or Redis see them.

A key that keeps sending past its limit (a flood, a client that ignores
Retry-After) would otherwise cost a whole request's work per refusal: parsing,
authentication, an admission round trip. Answered here, a refusal is a header
scan and a dictionary look-up (bench/ceiling.py --flood), so refusals cannot
crowd out the requests that are admitted.

Only the requests bucket is remembered: it refuses every call of the key alike,
whatever its model or size, until it refills (a tokens refusal depends on the
request's size, a model's capacity on the model). Calls with an Idempotency-Key
go through (a retry may be owed an earlier generation's result). What the
memory may answer differently from the full path, for at most one Retry-After:
a key revoked meanwhile gets this 429, not a 401, and a raised limit applies
once the refusal runs out, as for a client that honours Retry-After.
"""

from __future__ import annotations

import functools
import json
import math
import secrets
import time
from collections.abc import Callable
from typing import Any

from core.asgi import ASGIApp, Receive, Scope, Send
from core.error_codes import DomainError
from core.errors import domain_error_body
from core.middleware import REQUEST_ID_RE
from inference_client import metrics as m
from inference_client.admission import duration_text
from inference_client.stages.admit import rate_limited

# Keys remembered at once (a process serving more refused keys forgets the oldest).
MAX_REMEMBERED = 10_000


class RefusalMemory:
    """Raw Authorization header -> (until, tier, requests per minute)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._refused: dict[bytes, tuple[float, str, str]] = {}

    def remember(self, authorization: bytes, retry_after_ms: int, tier: str, limit: str) -> None:
        now = self.clock()
        if len(self._refused) >= MAX_REMEMBERED:
            self._refused = {k: v for k, v in self._refused.items() if v[0] > now}
            while len(self._refused) >= MAX_REMEMBERED:
                del self._refused[next(iter(self._refused))]
        self._refused[authorization] = (now + retry_after_ms / 1000, tier, limit)

    def __len__(self) -> int:
        """Keys remembered (some may have run out: they go when next looked up)."""
        return len(self._refused)

    def refusal(self, authorization: bytes) -> tuple[int, str, str] | None:
        """(milliseconds left, tier, limit) while the key is refused, else None."""
        entry = self._refused.get(authorization)
        if entry is None:
            return None
        left_ms = math.ceil((entry[0] - self.clock()) * 1000)
        if left_ms <= 0:
            del self._refused[authorization]
            return None
        return left_ms, entry[1], entry[2]


memory = RefusalMemory()


def remember_refusal(request: Any, exc: DomainError, tier: str) -> None:
    """After the full path's refusal of ``request`` (by a caller of ``tier``), from the view."""
    if exc.code != "rate_limit_exceeded" or exc.extra.get("reason") != "requests":
        return
    authorization = request.META.get("HTTP_AUTHORIZATION", "")
    if not authorization.startswith("Bearer ") or request.META.get("HTTP_IDEMPOTENCY_KEY"):
        return
    memory.remember(authorization.encode("latin-1"), int(exc.headers["retry-after-ms"]), tier,
                    exc.headers.get("x-ratelimit-limit-requests", ""))


# A refusal as written: (status, headers, body).
Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


class RefusalGate:
    """ASGI, in front of the API app: POSTs to ``paths`` by a remembered key are
    refused here, with the full path's body and headers. ``answer`` is the rule
    alone, for a server that asks before making the request's task (config/http.py)."""

    def __init__(self, app: ASGIApp, paths: tuple[str, ...], memory: RefusalMemory = memory) -> None:
        self.app, self.paths, self.memory = app, frozenset(paths), memory

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> Any:
        if scope["type"] == "http":
            answer = self.answer(scope["method"], scope["path"], scope["headers"])
            if answer is not None:
                status, headers, body = answer
                await send({"type": "http.response.start", "status": status, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return None
        return await self.app(scope, receive, send)

    def answer(self, method: str, path: str, headers: list[tuple[bytes, bytes]]) -> Answer | None:
        """The refusal of a request with these (lower-case) headers, if its key is remembered."""
        if method != "POST" or path not in self.paths:
            return None
        authorization = request_id = b""
        for name, value in headers:
            if name == b"authorization":
                authorization = value
            elif name == b"idempotency-key":
                return None
            elif name == b"x-request-id":
                request_id = value
        refusal = self.memory.refusal(authorization) if authorization else None
        return _refusal(*refusal, request_id) if refusal is not None else None


@functools.cache
def _counters(tier: str) -> tuple[Any, Any]:
    return m.REJECTED.labels(tier, "requests"), m.REQUESTS.labels("unknown", "429")


# Refusal bodies by message: a flood's refusals share a few hundred (tenths of a second
# left, per tier); past this many the cache starts over.
MAX_BODIES = 10_000
_bodies: dict[str, bytes] = {}


def _body(refusal: DomainError) -> bytes:
    body = _bodies.get(refusal.message)
    if body is None:
        if len(_bodies) >= MAX_BODIES:
            _bodies.clear()
        body = _bodies[refusal.message] = json.dumps(domain_error_body(refusal)).encode()
    return body


def _refusal(left_ms: int, tier: str, limit: str, request_id: bytes) -> Answer:
    for counter in _counters(tier):
        counter.inc()
    bucket = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": duration_text(left_ms)}
    if limit:
        bucket["x-ratelimit-limit-requests"] = limit
    refusal = rate_limited("requests", tier, left_ms, bucket)
    body = _body(refusal)
    incoming = request_id.decode("latin-1")
    request_id = (incoming if REQUEST_ID_RE.fullmatch(incoming) else secrets.token_hex(16)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"x-request-id", request_id)]
    headers += [(name.lower().encode(), value.encode()) for name, value in refusal.headers.items()]
    return refusal.status, headers, body
