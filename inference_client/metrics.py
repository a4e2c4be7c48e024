"""Prometheus metrics of the gateway (/metrics).

Request-level figures are observed by the gateway as requests end; names
follow vLLM's where the meaning is the same (``promptyard:`` instead of
``vllm:``, label ``model_name``), so a serving team's dashboards and alerts
carry over. Device-level figures (requests running / waiting, batch size per
device step, live workers, the controller's zone and rate, checkpoint fetches)
are read from the workers' heartbeats and node records and the controller's
state at scrape time.

Several server processes (``serve --workers N``) share one registry through
prometheus_client's multiprocess mode: ``PROMETHEUS_MULTIPROC_DIR`` is set by
``serve`` (or by the deployment) before the processes start.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from django.conf import settings
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from inference_protocol.catalog import model_names, split_served

LATENCY_BUCKETS = (.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120)

REQUESTS = Counter("inference_requests_total", "Completion requests by final HTTP status.",
                   ["model", "status"])
REJECTED = Counter("promptyard:admission_refusals_total",
                   "429/503/401 refusals at admission, by tier and reason.", ["tier", "reason"])
CACHE = Counter("inference_cache_lookups_total", "Prompt cache lookups by result.", ["result"])
TTFT = Histogram("promptyard:time_to_first_token_seconds",
                 "Time to first token, as the gateway sees it (queue included).", ["model_name"],
                 buckets=(.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30))
ITL = Histogram("promptyard:inter_token_latency_seconds", "Time between successive streamed tokens.",
                ["model_name"], buckets=(.001, .005, .01, .02, .04, .06, .08, .1, .25, .5, 1, 2.5))
E2E = Histogram("promptyard:e2e_request_latency_seconds", "End-to-end latency of a completion.",
                ["model_name"], buckets=LATENCY_BUCKETS)
QUEUE_TIME = Histogram("promptyard:request_queue_time_seconds",
                       "Time a request waited in a device's queue before its first step.", ["model_name"],
                       buckets=LATENCY_BUCKETS)
PROMPT_TOKENS = Counter("promptyard:prompt_tokens", "Prompt tokens processed.", ["model_name"])
GENERATION_TOKENS = Counter("promptyard:generation_tokens", "Tokens generated.", ["model_name"])
GENERATIONS_DROPPED = Counter("promptyard:generations_dropped_total",
                              "Runs of saved prompt versions not logged (generations/), by reason: "
                              "sampled or backlog (the usage writer behind).", ["reason"])
SUCCESS = Counter("promptyard:request_success", "Finished requests, by finish reason.",
                  ["model_name", "finished_reason"])


def count_cache(result: str) -> None:
    CACHE.labels(result).inc()


def observe_end(model: str, *, latency_s: float, ttft_s: float | None, result: dict | None) -> None:
    E2E.labels(model).observe(latency_s)
    if ttft_s is not None:
        TTFT.labels(model).observe(ttft_s)
    if result is not None:
        PROMPT_TOKENS.labels(model).inc(result["prompt_tokens"])
        GENERATION_TOKENS.labels(model).inc(result["completion_tokens"])
        SUCCESS.labels(model, result["finish_reason"]).inc()
        if result.get("queued_s") is not None:
            QUEUE_TIME.labels(model).observe(result["queued_s"])


class FleetCollector(Collector):
    """Gauges (and the batch-size histogram) computed from heartbeats and the
    capacity controller when scraped: they describe devices, not this process."""

    def collect(self) -> Iterator[Metric]:
        from inference_client.capacity import ZONES, current_states
        from inference_protocol.backend import live_workers

        records = live_workers()
        workers = GaugeMetricFamily("inference_live_workers", "Workers with a live heartbeat.",
                                    labels=["model"])
        running = GaugeMetricFamily("promptyard:num_requests_running",
                                    "Requests in a device's running batch.", labels=["model_name"])
        waiting = GaugeMetricFamily("promptyard:num_requests_waiting",
                                    "Requests queued on devices.", labels=["model_name"])
        batch = GaugeMetricFamily("inference_worker_batch_size", "Sequences in a worker's batch now.",
                                  labels=["model", "worker"])
        for model in model_names():
            mine = [r for r in records if split_served(r["model"])[0] == model]
            workers.add_metric([model], len(mine))
            running.add_metric([model], sum(int(r.get("running") or 0) for r in mine))
            waiting.add_metric([model], sum(int(r.get("queue_length") or 0) for r in mine))
        for r in records:
            batch.add_metric([r["model"], r["worker"]], r.get("running") or 0)
        yield from (workers, running, waiting, batch)
        yield from _batch_size_histograms(records)
        if settings.REDIS_URL:
            rate = GaugeMetricFamily("inference_global_rate_tokens_per_second",
                                     "Global rate set by the controller.", labels=["model"])
            zone = GaugeMetricFamily("inference_capacity_zone", "Controller zone: 0 green, 1 yellow, 2 red.",
                                     labels=["model"])
            for model, state in current_states().items():
                rate.add_metric([model], state.get("rate", 0))
                zone.add_metric([model], ZONES.index(state.get("zone", "green")))
            yield from (rate, zone)
            yield from _checkpoint_gauges()


def _checkpoint_gauges():
    """Swarm progress per worker and model version, from the workers' node records."""
    from inference_protocol.heartbeat import read_nodes

    labels = ["model_name", "version", "worker", "state"]
    done = GaugeMetricFamily("promptyard:checkpoint_done_bytes",
                             "Bytes of a model version a worker has fetched.", labels=labels)
    total = GaugeMetricFamily("promptyard:checkpoint_total_bytes",
                              "Bytes of a model version a worker fetches or holds.", labels=labels)
    for node in read_nodes():
        for label, entry in (node.get("checkpoints") or {}).items():
            model, version = split_served(label)
            values = [model, version or "", node["worker"], entry.get("state") or ""]
            done.add_metric(values, entry.get("done_bytes") or 0)
            total.add_metric(values, entry.get("total_bytes") or 0)
    yield from (done, total)


def _batch_size_histograms(records: list[dict]):
    """Sequences per device step, from the step counts each worker keeps."""
    family = HistogramMetricFamily("promptyard:iteration_batch_size", "Sequences per device step.",
                                   labels=["model_name"])
    bounds = (1, 2, 4, 8, 16, 32, 64, 128, 256)
    for model in model_names():
        counts: dict[int, int] = {}
        for r in records:
            if split_served(r["model"])[0] == model:
                for size, steps in (r.get("batch_sizes") or {}).items():
                    counts[int(size)] = counts.get(int(size), 0) + steps
        if not counts:
            continue
        buckets = [(str(b), sum(n for s, n in counts.items() if s <= b)) for b in bounds]
        buckets.append(("+Inf", sum(counts.values())))
        family.add_metric([model], buckets, sum(s * n for s, n in counts.items()))
    yield family


def _cache_hit_ratio(registry) -> GaugeMetricFamily:
    values: dict[str, float] = {}
    for family in registry.collect():
        if family.name == "inference_cache_lookups":
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    values[sample.labels["result"]] = values.get(sample.labels["result"], 0) + sample.value
    hits = values.get("exact", 0) + values.get("semantic", 0)
    total = hits + values.get("miss", 0)
    return GaugeMetricFamily("inference_cache_hit_ratio", "Cache hits / lookups since start.",
                             value=hits / total if total else 0.0)


def render() -> tuple[bytes, str]:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        from prometheus_client import REGISTRY as registry
    fleet = CollectorRegistry()
    fleet.register(FleetCollector())
    ratio = _cache_hit_ratio(registry)
    fleet.register(type("Ratio", (), {"collect": lambda self: [ratio]})())
    return generate_latest(registry) + generate_latest(fleet), CONTENT_TYPE_LATEST
