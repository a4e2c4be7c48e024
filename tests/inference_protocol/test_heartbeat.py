"""Heartbeat records are found through their index set, never by scanning the keyspace."""

import time
import uuid

import pytest

from core.redis import get_redis
from inference_protocol import heartbeat
from inference_protocol.heartbeat import heartbeat_key, read_heartbeats, read_nodes

pytestmark = pytest.mark.needs_services


def _record(worker: str, model: str) -> dict:
    return {"worker": worker, "model": model, "at": time.time(), "free_slots": 1}


def test_records_are_read_by_model_and_an_expired_one_leaves_the_index():
    model = f"hb-{uuid.uuid4().hex[:8]}"
    longer = f"{model}:x"  # a model whose name starts with the other's
    node = {"worker": "w1", "at": time.time(), "swarm": None, "checkpoints": {}}
    heartbeat.publish([_record("w1", model), _record("w1", longer)], node=node)
    heartbeat.publish([_record("w2", model)])

    assert sorted(r["worker"] for r in read_heartbeats(model)) == ["w1", "w2"]
    assert [(r["worker"], r["model"]) for r in read_heartbeats(longer)] == [("w1", longer)]
    mine = [r for r in read_heartbeats() if r["model"] in (model, longer)]
    assert len(mine) == 3
    assert node in read_nodes()

    redis = get_redis()
    gone = heartbeat_key(model, "w2")
    redis.delete(gone)  # stands for its TTL running out: the worker stopped
    assert [r["worker"] for r in read_heartbeats(model)] == ["w1"]
    assert gone.encode() not in redis.smembers(heartbeat._INDEX)
    heartbeat.publish([_record("w2", model)])  # it comes back with its next heartbeat
    assert sorted(r["worker"] for r in read_heartbeats(model)) == ["w1", "w2"]
