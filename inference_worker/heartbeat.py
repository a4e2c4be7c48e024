"""Worker heartbeats: live capacity per model, for the gateway's controller.

Each worker process publishes, every HEARTBEAT_INTERVAL_S, one record per
loaded model under a key with a TTL of HEARTBEAT_TTL_S: a dead worker simply
stops refreshing and disappears within the TTL. A worker that failed to load
its model never publishes, so the gateway never routes to it.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time

from django.conf import settings

HEARTBEAT_INTERVAL_S = float(os.environ.get("HEARTBEAT_INTERVAL_S", "1.0"))
HEARTBEAT_TTL_S = float(os.environ.get("HEARTBEAT_TTL_S", "5.0"))
WORKER_ID = f"{socket.gethostname()}:{os.getpid()}"
_PREFIX = "inference:worker:"


def heartbeat_record(model: str, stats) -> dict:
    return {
        "worker": WORKER_ID, "model": model, "at": time.time(),
        "free_slots": stats.free_slots, "max_batch_size": stats.max_batch_size,
        "running": stats.running, "queue_length": stats.queue_length,
        "tokens_per_s": stats.tokens_per_s, "requests_per_s": stats.requests_per_s,
        "busy_fraction": stats.busy_fraction, "healthy": stats.healthy,
    }


def publish(records: list[dict]) -> None:
    from inference_worker.redis_client import get_redis

    pipe = get_redis().pipeline(transaction=False)
    for record in records:
        pipe.set(f"{_PREFIX}{record['model']}:{record['worker']}", json.dumps(record),
                 px=int(HEARTBEAT_TTL_S * 1000))
    pipe.execute()


def live_workers(model: str | None = None) -> list[dict]:
    """Heartbeats of live workers (all models, or one). Without a broker the
    in-process schedulers are the workers: asking for one model loads it, as
    its first request would."""
    if not settings.CELERY_BROKER_URL:
        from inference_worker.runtime import get_scheduler, loaded_schedulers

        if model is not None:
            try:
                get_scheduler(model)
            except Exception:  # a model that cannot load has no live worker
                return []
        records = [heartbeat_record(name, s.stats()) for name, s in loaded_schedulers().items()]
    else:
        from inference_worker.redis_client import get_redis

        redis = get_redis()
        keys = list(redis.scan_iter(match=f"{_PREFIX}{model or '*'}:*", count=500))
        records = [json.loads(raw) for raw in redis.mget(keys) if raw] if keys else []
    return [r for r in records if model is None or r["model"] == model]


class HeartbeatThread(threading.Thread):
    """Publishes the stats of every loaded scheduler until stopped."""

    def __init__(self):
        super().__init__(name="heartbeat", daemon=True)
        self._stop_event = threading.Event()

    def run(self):
        from inference_worker.runtime import loaded_schedulers

        while not self._stop_event.is_set():
            records = [heartbeat_record(name, s.stats())
                       for name, s in loaded_schedulers().items() if s.stats().healthy]
            try:
                if records:
                    publish(records)
            except Exception:  # Redis blips must not kill the worker; the TTL covers gaps
                time.sleep(HEARTBEAT_INTERVAL_S)
            self._stop_event.wait(HEARTBEAT_INTERVAL_S)

    def stop(self):
        self._stop_event.set()
