"""Worker heartbeats: the record a worker publishes per loaded model, and how
the gateway reads them.

Each worker process publishes, every HEARTBEAT_INTERVAL_S, one record per
loaded model under a key with a TTL of HEARTBEAT_TTL_S: a dead worker simply
stops refreshing and disappears within the TTL. A worker that failed to load
its model never publishes, so the gateway never routes to it.

Record fields: worker, model, at, free_slots, max_batch_size, running,
queue_length, tokens_per_s, requests_per_s, busy_fraction, healthy,
batch_sizes (steps run so far, by batch size).

A worker process that fetches checkpoints also publishes one **node record**
(same interval and TTL), from its first fetch on, whether or not a model is
loaded yet:

    {"worker": "host:pid", "at": 1733000000.0,
     "swarm": "10.0.0.7:41234",          # where its checkpoint swarm listens, or null
     "checkpoints": {                    # one entry per model version it fetched or is fetching
        "smollm2@v1": {"state": "downloading", "percent": 41.5, "done_bytes": 41500000,
                       "total_bytes": 100000000, "rate": 8000000.0, "peers": 5, "reason": null}}}

``state`` is one of CHECKPOINT_STATES: downloading (with percent), verifying (SHA-256
of every file against the manifest), present (verified, in the cache, seeded to
peers), failed (``reason`` says why). Peers find each other through these records
first (``swarm`` of the nodes that list the same version); once connected, peer
exchange and the DHT keep a swarm going without Redis.
"""

from __future__ import annotations

import json
import os

from core.redis import get_redis

HEARTBEAT_INTERVAL_S = float(os.environ.get("HEARTBEAT_INTERVAL_S", "1.0"))
HEARTBEAT_TTL_S = float(os.environ.get("HEARTBEAT_TTL_S", "5.0"))
_PREFIX = "inference:worker:"
_NODE_PREFIX = "inference:node:"

DOWNLOADING, VERIFYING, PRESENT, FAILED = "downloading", "verifying", "present", "failed"
CHECKPOINT_STATES = (DOWNLOADING, VERIFYING, PRESENT, FAILED)


def heartbeat_key(model: str, worker: str) -> str:
    return f"{_PREFIX}{model}:{worker}"


def node_key(worker: str) -> str:
    return f"{_NODE_PREFIX}{worker}"


def publish(records: list[dict], node: dict | None = None) -> None:
    """Model records, and this worker's node record, in one round trip."""
    pipe = get_redis().pipeline(transaction=False)
    for record in records:
        pipe.set(heartbeat_key(record["model"], record["worker"]), json.dumps(record),
                 px=int(HEARTBEAT_TTL_S * 1000))
    if node is not None:
        pipe.set(node_key(node["worker"]), json.dumps(node), px=int(HEARTBEAT_TTL_S * 1000))
    pipe.execute()


def read_nodes() -> list[dict]:
    """Live node records of every worker."""
    redis = get_redis()
    keys = list(redis.scan_iter(match=f"{_NODE_PREFIX}*", count=500))
    return [json.loads(raw) for raw in redis.mget(keys) if raw] if keys else []


def swarm_peers(label: str, *, exclude: str | None = None) -> list[tuple[str, int]]:
    """Swarm addresses of the live workers that have or fetch ``label`` (model@version)."""
    peers = []
    for node in read_nodes():
        entry = (node.get("checkpoints") or {}).get(label)
        if node.get("swarm") and entry and entry.get("state") != FAILED and node["worker"] != exclude:
            host, _, port = node["swarm"].rpartition(":")
            peers.append((host.strip("[]"), int(port)))
    return peers


def read_heartbeats(model: str | None = None) -> list[dict]:
    """Live records in Redis, for one model or all."""
    redis = get_redis()
    keys = list(redis.scan_iter(match=f"{_PREFIX}{model or '*'}:*", count=500))
    records = [json.loads(raw) for raw in redis.mget(keys) if raw] if keys else []
    return [r for r in records if model is None or r["model"] == model]
