"""Worker heartbeats: the record a worker publishes per loaded model, and how
the gateway reads them.

Each worker process publishes, every HEARTBEAT_INTERVAL_S, one record per
loaded model under a key with a TTL of HEARTBEAT_TTL_S: a dead worker simply
stops refreshing and disappears within the TTL. A worker that failed to load
its model never publishes, so the gateway never routes to it.

Record fields: worker, model, at, free_slots, max_batch_size, running,
queue_length, tokens_per_s, requests_per_s, busy_fraction, healthy,
batch_sizes (steps run so far, by batch size).
"""

from __future__ import annotations

import json
import os

from core.redis import get_redis

HEARTBEAT_INTERVAL_S = float(os.environ.get("HEARTBEAT_INTERVAL_S", "1.0"))
HEARTBEAT_TTL_S = float(os.environ.get("HEARTBEAT_TTL_S", "5.0"))
_PREFIX = "inference:worker:"


def heartbeat_key(model: str, worker: str) -> str:
    return f"{_PREFIX}{model}:{worker}"


def publish(records: list[dict]) -> None:
    pipe = get_redis().pipeline(transaction=False)
    for record in records:
        pipe.set(heartbeat_key(record["model"], record["worker"]), json.dumps(record),
                 px=int(HEARTBEAT_TTL_S * 1000))
    pipe.execute()


def read_heartbeats(model: str | None = None) -> list[dict]:
    """Live records in Redis, for one model or all."""
    redis = get_redis()
    keys = list(redis.scan_iter(match=f"{_PREFIX}{model or '*'}:*", count=500))
    records = [json.loads(raw) for raw in redis.mget(keys) if raw] if keys else []
    return [r for r in records if model is None or r["model"] == model]
