"""Worker heartbeats: the record a worker publishes per loaded model, and how
the gateway reads them.

Each worker process publishes, every HEARTBEAT_INTERVAL_S, one record per
loaded model under a key with a TTL of HEARTBEAT_TTL_S: a dead worker simply
stops refreshing and disappears within the TTL. A worker that failed to load
its model never publishes, so the gateway never routes to it.

Readers find the keys through an index set that each publish adds them to, not
by scanning the keyspace: Redis also holds every generation's event log for a
day, and with 260,000 keys one SCAN of it took 520 calls and 114 ms of Redis's
only thread, once per second in every gateway process (its capacity
controller). A reader drops the keys it found expired from the index.

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
only (``swarm`` of the nodes that list the same version: the swarm is private, no
peer exchange or DHT); once connected, they keep going without Redis.
"""

from __future__ import annotations

import json
from typing import Any, cast

from core.env import env_float
from core.redis import get_redis

HEARTBEAT_INTERVAL_S = env_float("HEARTBEAT_INTERVAL_S", 1.0)
HEARTBEAT_TTL_S = env_float("HEARTBEAT_TTL_S", 5.0)
_PREFIX = "inference:worker:"
_NODE_PREFIX = "inference:node:"
# The keys published under each prefix (live or expired since).
_INDEX = "inference:worker-keys"
_NODE_INDEX = "inference:node-keys"

DOWNLOADING, VERIFYING, PRESENT, FAILED = "downloading", "verifying", "present", "failed"
CHECKPOINT_STATES = (DOWNLOADING, VERIFYING, PRESENT, FAILED)


def heartbeat_key(model: str, worker: str) -> str:
    return f"{_PREFIX}{model}:{worker}"


def node_key(worker: str) -> str:
    return f"{_NODE_PREFIX}{worker}"


def publish(records: list[dict[str, Any]], node: dict[str, Any] | None = None) -> None:
    """Model records, and this worker's node record, in one round trip."""
    pipe = get_redis().pipeline(transaction=False)
    for record in records:
        key = heartbeat_key(record["model"], record["worker"])
        pipe.set(key, json.dumps(record), px=int(HEARTBEAT_TTL_S * 1000))
        pipe.sadd(_INDEX, key)
    if node is not None:
        key = node_key(node["worker"])
        pipe.set(key, json.dumps(node), px=int(HEARTBEAT_TTL_S * 1000))
        pipe.sadd(_NODE_INDEX, key)
    pipe.execute()


def _read(index: str, prefix: str) -> list[dict[str, Any]]:
    """The live records among the indexed keys that start with ``prefix``."""
    redis = get_redis()
    # A sync client's replies (redis-py types them as maybe awaitable).
    members = cast(set[bytes], redis.smembers(index))
    keys = sorted(key for key in members if key.startswith(prefix.encode()))
    if not keys:
        return []
    raws = cast(list[bytes | None], redis.mget(keys))
    expired = [key for key, raw in zip(keys, raws, strict=True) if raw is None]
    if expired:
        # A worker that publishes again between the MGET and this re-adds its key
        # with its next heartbeat.
        redis.srem(index, *expired)
    return [json.loads(raw) for raw in raws if raw is not None]


def read_nodes() -> list[dict[str, Any]]:
    """Live node records of every worker."""
    return _read(_NODE_INDEX, _NODE_PREFIX)


def swarm_peers(label: str, *, exclude: str | None = None) -> list[tuple[str, int]]:
    """Swarm addresses of the live workers that have or fetch ``label`` (model@version)."""
    peers = []
    for node in read_nodes():
        entry = (node.get("checkpoints") or {}).get(label)
        if node.get("swarm") and entry and entry.get("state") != FAILED and node["worker"] != exclude:
            host, _, port = node["swarm"].rpartition(":")
            peers.append((host.strip("[]"), int(port)))
    return peers


def read_heartbeats(model: str | None = None) -> list[dict[str, Any]]:
    """Live records in Redis, for one model or all."""
    records = _read(_INDEX, f"{_PREFIX}{model}:" if model else _PREFIX)
    return [r for r in records if model is None or r["model"] == model]
