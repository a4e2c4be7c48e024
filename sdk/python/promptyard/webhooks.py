"""Verifying Promptyard's webhook deliveries.

    from promptyard.webhooks import WebhookVerificationError, verify

    try:
        event = verify(request.body, request.headers, secret)
    except WebhookVerificationError:
        ...  # answer 400: not from Promptyard, altered, or replayed

Each attempt is signed when it is sent: `Promptyard-Signature: v1=<hex>` is an
HMAC-SHA256, with the endpoint's secret, of `<timestamp>.<body>`, beside
`Promptyard-Timestamp: <unix seconds>`. A delivery signed more than
`tolerance_s` from now (a replay of a captured one) is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterable

from .errors import PromptyardError

SIGNATURE_HEADER = "Promptyard-Signature"
TIMESTAMP_HEADER = "Promptyard-Timestamp"
DEFAULT_TOLERANCE_S = 300


class WebhookVerificationError(PromptyardError):
    """The delivery is not to be trusted; `code` says why: webhook_header_missing,
    webhook_timestamp_invalid, webhook_signature_mismatch or webhook_timestamp_outside_tolerance."""


def _header(headers, name: str) -> str:
    items = headers.items() if hasattr(headers, "items") else headers
    for key, value in items:
        if key.lower() == name.lower():
            return value
    raise WebhookVerificationError(f"The {name} header is missing.", code="webhook_header_missing")


def _signatures(header: str) -> list[str]:
    """The v1 signatures of the header (several while the server signs with two secrets)."""
    return [part.strip()[3:] for part in header.split(",") if part.strip().startswith("v1=")]


def verify(payload: bytes, headers, secret: str | Iterable[str],
           tolerance_s: float = DEFAULT_TOLERANCE_S) -> dict:
    """The event (the decoded body) if one of its v1 signatures is the HMAC of
    `<timestamp>.<payload>` with `secret` (or one of several, while you switch to
    a rotated secret), and its timestamp is within `tolerance_s` seconds of now;
    else raises WebhookVerificationError.

    `payload`: the request body exactly as received (bytes, not re-serialised JSON).
    `headers`: the request's headers, a mapping or (name, value) pairs; names in any case."""
    if not isinstance(payload, bytes | bytearray | memoryview):
        raise TypeError("payload is the raw request body, as bytes")
    keys = [secret] if isinstance(secret, str) else list(secret)
    if not keys:
        raise ValueError("secret: at least one")
    raw_timestamp = _header(headers, TIMESTAMP_HEADER).strip()
    signatures = _signatures(_header(headers, SIGNATURE_HEADER))
    try:
        timestamp = int(raw_timestamp)
    except ValueError:
        raise WebhookVerificationError(f"The {TIMESTAMP_HEADER} header is not unix seconds.",
                                       code="webhook_timestamp_invalid") from None
    signed = raw_timestamp.encode() + b"." + bytes(payload)
    expected = [hmac.new(s.encode(), signed, hashlib.sha256).hexdigest() for s in keys]
    # Every pair compared, in constant time each: no early exit that tells which one matched.
    matches = [hmac.compare_digest(e.encode(), got.encode()) for e in expected for got in signatures]
    if not any(matches):
        raise WebhookVerificationError("No signature matches the body: not signed with this secret, "
                                       "or altered.", code="webhook_signature_mismatch")
    age = time.time() - timestamp
    if abs(age) > tolerance_s:
        raise WebhookVerificationError(
            f"Signed {age:.0f} s ago, outside the tolerance of {tolerance_s:g} s (a replay, or a clock off).",
            code="webhook_timestamp_outside_tolerance")
    return json.loads(bytes(payload))
