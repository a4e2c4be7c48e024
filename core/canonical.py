"""Canonical JSON and its hash: one definition for every key derived from a
JSON value (idempotency fingerprints, prompt-cache keys).

Key order and whitespace do not change the bytes; the encoding is json.dumps'
ASCII-only default, so existing keys stay valid.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def canonical_hash(value: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_json(value)).hexdigest()
