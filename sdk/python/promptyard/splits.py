"""A/B splits, picked exactly as the server picks them (playground/splits.py):
a user key always gets the same variant while the split holds."""

from __future__ import annotations

import hashlib
import secrets

TOTAL_WEIGHT = 100


def split_bucket(prompt_id: str, label: str, user: str) -> int:
    digest = hashlib.sha256(f"{prompt_id}:{label}:{user}".encode()).hexdigest()
    return int(digest[:15], 16) % TOTAL_WEIGHT


def split_pick(weights: list[int], *, prompt_id: str, label: str, user: str | None) -> int:
    """The index of the variant `user` gets (random by weight without a user key)."""
    bucket = split_bucket(prompt_id, label, user) if user is not None else secrets.randbelow(TOTAL_WEIGHT)
    total = 0
    for i, weight in enumerate(weights):
        total += weight
        if bucket < total:
            return i
    return len(weights) - 1
