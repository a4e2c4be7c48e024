"""Prometheus metrics of the gateway (/metrics). Worker-side figures (queue
depth, batch sizes) come from the heartbeats, refreshed at scrape time."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest

REQUESTS = Counter("inference_requests_total", "Completion requests by final HTTP status.",
                   ["model", "status"])
REJECTED = Counter("inference_rate_limited_total", "429/503 refusals at admission, by tier and reason.",
                   ["tier", "reason"])
CACHE = Counter("inference_cache_lookups_total", "Prompt cache lookups by result.", ["result"])
CACHE_HIT_RATIO = Gauge("inference_cache_hit_ratio", "Cache hits / lookups since start.")
TOKENS = Counter("inference_tokens_total", "Tokens generated or read, by kind.", ["model", "kind"])
TTFT = Histogram("inference_time_to_first_token_seconds", "Time to first token (gateway view).",
                 ["model"], buckets=(.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30))
LATENCY = Histogram("inference_request_latency_seconds", "Total latency of a completion.",
                    ["model"], buckets=(.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120))
QUEUE_DEPTH = Gauge("inference_queue_depth", "Requests waiting for a model (heartbeats + in flight).",
                    ["model"])
WORKERS = Gauge("inference_live_workers", "Workers with a live heartbeat.", ["model"])
BATCH_SIZE = Gauge("inference_worker_batch_size", "Sequences running in a worker's batch now.",
                   ["model", "worker"])
MAX_BATCH = Gauge("inference_worker_max_batch_size", "A worker's batch size limit.", ["model", "worker"])
GLOBAL_RATE = Gauge("inference_global_rate_tokens_per_second", "Global rate set by the controller.",
                    ["model"])
ZONE = Gauge("inference_capacity_zone", "Controller zone: 0 green, 1 yellow, 2 red.", ["model"])


def count_cache(result: str) -> None:
    CACHE.labels(result).inc()
    hits = sum(CACHE.labels(r)._value.get() for r in ("exact", "semantic"))
    total = hits + CACHE.labels("miss")._value.get()
    CACHE_HIT_RATIO.set(hits / total if total else 0.0)


def refresh_from_heartbeats() -> None:
    from django.conf import settings

    from inference_client.capacity import ZONES, current_states
    from inference_protocol.backend import live_workers

    BATCH_SIZE.clear()
    MAX_BATCH.clear()
    records = live_workers()
    for model in settings.INFERENCE_MODELS:
        mine = [r for r in records if r["model"] == model]
        WORKERS.labels(model).set(len(mine))
        QUEUE_DEPTH.labels(model).set(sum(int(r.get("queue_length") or 0) for r in mine))
    for r in records:
        BATCH_SIZE.labels(r["model"], r["worker"]).set(r.get("running") or 0)
        MAX_BATCH.labels(r["model"], r["worker"]).set(r.get("max_batch_size") or 0)
    if settings.REDIS_URL:
        for model, state in current_states().items():
            QUEUE_DEPTH.labels(model).set(state.get("queued", 0))
            GLOBAL_RATE.labels(model).set(state.get("rate", 0))
            ZONE.labels(model).set(ZONES.index(state.get("zone", "green")))


def render() -> tuple[bytes, str]:
    refresh_from_heartbeats()
    return generate_latest(), CONTENT_TYPE_LATEST
