"""This worker's heartbeats: one record per loaded, healthy model, and the node
record (swarm address, checkpoint downloads) once a checkpoint was asked for,
published every HEARTBEAT_INTERVAL_S (the records and their keys:
inference_protocol.heartbeat)."""

from __future__ import annotations

import threading
import time

from inference_protocol import config
from inference_protocol.heartbeat import HEARTBEAT_INTERVAL_S, publish
from inference_worker.identity import WORKER_ID
from inference_worker.runtime import engine_status, loaded_schedulers


def heartbeat_record(model: str, stats, engine: tuple[int, str | None] | None = None) -> dict:
    """``engine``: (the config document the engine was built from, the newest
    spec's build failure), inference_worker.runtime.engine_status."""
    engine_config, engine_error = engine or (config.current().number, None)
    return {
        "worker": WORKER_ID, "model": model, "at": time.time(),
        "free_slots": stats.free_slots, "max_batch_size": stats.max_batch_size,
        "running": stats.running, "queue_length": stats.queue_length,
        "tokens_per_s": stats.tokens_per_s, "requests_per_s": stats.requests_per_s,
        "busy_fraction": stats.busy_fraction, "healthy": stats.healthy, "steps": stats.steps,
        "batch_sizes": stats.batch_sizes,
        "config": config.current().number,  # the config document this worker runs on
        "engine_config": engine_config, "engine_error": engine_error,
    }


def local_records(model: str | None = None) -> list[dict]:
    """Records of this process's schedulers (all, or one model)."""
    return [heartbeat_record(name, s.stats(), engine_status(name)) for name, s in loaded_schedulers().items()
            if model is None or name == model]


def node_record() -> dict | None:
    from inference_worker import checkpoints  # libtorrent: loaded at the first beat, not at import

    return checkpoints.node_record()


class HeartbeatThread(threading.Thread):
    """Publishes the stats of every loaded scheduler, and the node record, until stopped."""

    def __init__(self):
        super().__init__(name="heartbeat", daemon=True)
        self._stop_event = threading.Event()

    def run(self):
        while not self._stop_event.is_set():
            for scheduler in list(loaded_schedulers().values()):
                scheduler.check_health()  # may be a network call: here, not under a lock
            records = [r for r in local_records() if r["healthy"]]
            node = node_record()
            try:
                if records or node:
                    publish(records, node)
            except Exception:  # Redis blips must not kill the worker; the TTL covers gaps
                time.sleep(HEARTBEAT_INTERVAL_S)
            self._stop_event.wait(HEARTBEAT_INTERVAL_S)

    def stop(self):
        self._stop_event.set()
