"""Idempotency-Key (IETF draft): one key, one request, one result, for 24 hours.

The first request with a key reserves it (SET NX) with a fingerprint of its
body and the request id it will run under; a retry with the same key and
body attaches to that request id (its event log replays the tokens, or the
stored result); the same key with another body is a 422. Keys are scoped per
API key (or user), so two tenants may use the same key independently.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable
from typing import cast

from django.conf import settings

from core.canonical import canonical_hash
from core.error_codes import DomainError
from core.redis import get_aredis

MAX_KEY_LENGTH = 255


def body_fingerprint(body: dict) -> str:
    # Canonical JSON: key order and whitespace are not a different request.
    return canonical_hash(body)


def check_idempotency_key(value: str | None) -> str | None:
    if value is None:
        return None
    if not value or len(value) > MAX_KEY_LENGTH:
        raise DomainError(f"The Idempotency-Key header must be 1 to {MAX_KEY_LENGTH} characters.",
                          code="invalid_idempotency_key", field="Idempotency-Key")
    return value


def _redis_key(scope: str, key: str) -> str:
    return f"idem:{scope}:{hashlib.sha256(key.encode()).hexdigest()}"


async def idempotency_reserve(*, scope: str, key: str, fingerprint: str, request_id: str,
                              created: int) -> dict | None:
    """None: this request owns the key. Otherwise the first request's record."""
    redis = get_aredis()
    record = json.dumps({"fp": fingerprint, "request_id": request_id, "created": created})
    for _ in range(3):  # the first owner may have released the key meanwhile
        if await redis.set(_redis_key(scope, key), record, nx=True, ex=settings.IDEMPOTENCY_TTL_S):
            return None
        raw = await redis.get(_redis_key(scope, key))
        if raw is None:
            continue
        existing = json.loads(raw)
        if existing["fp"] != fingerprint:
            raise DomainError("This Idempotency-Key was already used with a different request body.",
                              code="idempotency_key_reused", field="Idempotency-Key")
        return existing
    raise DomainError("The Idempotency-Key is contended; retry.", code="idempotency_conflict",
                      field="Idempotency-Key")


_RELEASE = """
local raw = redis.call('GET', KEYS[1])
if raw and cjson.decode(raw)['request_id'] == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


async def idempotency_release(*, scope: str, key: str, request_id: str) -> None:
    """The request was refused before it ran: a retry may run it afresh."""
    await cast(Awaitable[object], get_aredis().eval(_RELEASE, 1, _redis_key(scope, key), request_id))
