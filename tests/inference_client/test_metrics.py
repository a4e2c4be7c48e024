"""/metrics after real traffic: the serving figures a team watches moved."""

import json

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from inference_protocol.backend import live_workers
from tests.inference_client.conftest import METRICS_HEADERS, MODEL, make_key, uvicorn_server
from tests.inference_worker.workers import celery_worker
from tests.polling import wait_for

# Needs services: a Celery worker, uvicorn and Redis.
pytestmark = pytest.mark.needs_services

SMOL = "metrics-smollm2"
MODELS = {MODEL: {"engine": "fixed_cost", "max_inputs": 50, "call_s": 0.05},
          SMOL: {"engine": "llamacpp"}}


@pytest.fixture
def stack(django_db_blocker, transactional_db, _clean_cache, settings):
    settings.INFERENCE_MODELS = MODELS
    with celery_worker(MODELS, [f"gpu.{MODEL}", f"gpu.{SMOL}"], name="metrics"):
        wait_for(lambda: live_workers(MODEL) and live_workers(SMOL), timeout=60, what="both models")
        with uvicorn_server(django_db_blocker, INFERENCE_MODELS=json.dumps(MODELS),
                            RATE_LIMIT_FREE_RPM="2") as base:
            yield base


def _samples(text: str) -> dict[tuple, float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _value(samples, name, **labels):
    return sum(v for (n, ls), v in samples.items()
               if n == name and all(dict(ls).get(k) == v2 for k, v2 in labels.items()))


def test_should_move_the_serving_metrics_after_traffic(stack):
    _, paid = make_key("paid")
    _, free = make_key("free")
    headers = {"Authorization": f"Bearer {paid}"}
    body = {"model": MODEL, "messages": [{"role": "user", "content": "count me"}]}
    for _ in range(3):
        answer = httpx.post(f"{stack}/v1/chat/completions", json=body, headers=headers, timeout=30)
        assert answer.status_code == 200
    streamed = {"model": SMOL, "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8,
                "temperature": 0, "stream": True}
    with httpx.stream("POST", f"{stack}/v1/chat/completions", json=streamed, headers=headers,
                      timeout=60) as response:
        assert response.status_code == 200
        chunks = [line for line in response.iter_lines() if line.startswith("data: {")]
    assert len(chunks) >= 3  # role, several tokens, finish
    statuses = [httpx.post(f"{stack}/v1/chat/completions", json=body, timeout=30,
                           headers={"Authorization": f"Bearer {free}"}).status_code for _ in range(3)]
    assert 429 in statuses  # 2 requests per minute

    s = _samples(httpx.get(f"{stack}/metrics", headers=METRICS_HEADERS, timeout=10).text)
    assert _value(s, "promptyard:e2e_request_latency_seconds_count", model_name=MODEL) >= 3
    assert _value(s, "promptyard:time_to_first_token_seconds_count", model_name=SMOL) >= 1
    assert _value(s, "promptyard:inter_token_latency_seconds_count", model_name=SMOL) >= 1
    assert _value(s, "promptyard:request_queue_time_seconds_count", model_name=MODEL) >= 3
    assert _value(s, "promptyard:generation_tokens_total", model_name=SMOL) >= 2
    assert _value(s, "promptyard:prompt_tokens_total", model_name=MODEL) > 0
    assert _value(s, "promptyard:request_success_total", model_name=SMOL, finished_reason="length") >= 1
    assert _value(s, "promptyard:admission_refusals_total", reason="requests", tier="free") >= 1
    assert _value(s, "promptyard:iteration_batch_size_count", model_name=MODEL) >= 1
    assert ("promptyard:num_requests_running", (("model_name", MODEL),)) in s
    assert ("promptyard:num_requests_waiting", (("model_name", SMOL),)) in s


def test_should_show_swarm_progress_from_the_node_records():
    from inference_client import metrics
    from inference_protocol import heartbeat

    model = f"swarm-{MODEL}"
    worker = "metrics-host:1"
    entry = {"state": "downloading", "percent": 41.5, "done_bytes": 41_500_000, "total_bytes": 100_000_000,
             "rate": 8e6, "peers": 5, "reason": None}
    heartbeat.publish([], node={"worker": worker, "at": 0, "swarm": "10.0.0.7:41234",
                                "checkpoints": {f"{model}@v1": entry}})
    s = _samples(metrics.render()[0].decode())
    labels = {"model_name": model, "version": "v1", "worker": worker, "state": "downloading"}
    assert _value(s, "promptyard:checkpoint_done_bytes", **labels) == 41_500_000
    assert _value(s, "promptyard:checkpoint_total_bytes", **labels) == 100_000_000
