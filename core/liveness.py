"""Liveness marks of processes that hold no lease of their own while idle (beat,
the job drivers' poll loops): each writes a key with a TTL as it runs, and
`manage.py doctor` reads when each was last seen."""

from __future__ import annotations

import time
from typing import cast

from django.conf import settings

from core.redis import get_redis

_PREFIX = "alive:"


def mark(name: str, ttl_s: float) -> None:
    """``name`` is alive now; the mark lapses after ``ttl_s`` without another."""
    if settings.REDIS_URL:  # the embedded default runs its jobs in-process: nothing to watch
        get_redis().set(f"{_PREFIX}{name}", repr(time.time()), px=int(ttl_s * 1000))


def last_seen(name: str) -> float | None:
    """When ``name`` last marked itself alive (Unix time), None once its mark lapsed."""
    raw = cast(bytes | None, get_redis().get(f"{_PREFIX}{name}"))  # a sync client's reply
    return float(raw) if raw is not None else None
