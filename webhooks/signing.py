"""Signatures of deliveries: HMAC-SHA256 with the endpoint's secret over
`<timestamp>.<body>`, sent as `Promptyard-Signature: v1=<hex>` beside
`Promptyard-Timestamp: <unix seconds>`, made at each attempt; receivers verify
with the SDK's promptyard.webhooks.verify (README: the verification snippet)."""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "Promptyard-Signature"
TIMESTAMP_HEADER = "Promptyard-Timestamp"
DELIVERY_HEADER = "Promptyard-Delivery"
EVENT_HEADER = "Promptyard-Event"


def sign(*, secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256)
    return "v1=" + mac.hexdigest()
