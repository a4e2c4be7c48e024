"""A GPU worker's life on its own terms: it sizes its pool from its engine (no
-P, -c or prefetch flag), and a SIGTERM (warm shutdown) finishes what it holds
and loses no request, answering none twice. Real workers on RabbitMQ."""

import math
import signal
import subprocess
import uuid

import pytest
from django.conf import settings

from config.celery import app
from inference_client.backend import CeleryBackend
from inference_protocol.backend import live_workers
from inference_protocol.generation import GenerationRequest
from inference_worker.sizing import depth, window
from tests.inference_worker.workers import celery_worker, delete_queues
from tests.polling import wait_for


def test_the_window_covers_the_running_batch_the_next_a_refill_and_waiting_batch_lines():
    assert depth(0.2, 0.1) == 3 and window(50, 0.2, 0.1) == 200  # bench/e2e.py's device
    assert depth(0.01, 0.1) == 12  # a short call: more calls' worth waits for the refill
    assert depth(None, 0.1) == 3  # no declared call time: taken as the refill
    assert window(50, 5.0, 0.1) == 200  # a long call: still a batch beyond the two


@pytest.fixture
def model():
    name = f"life-{uuid.uuid4().hex[:8]}"
    yield name
    delete_queues([f"gpu.{name}"])


def _stats(name: str) -> dict:
    replies = app.control.inspect(destination=[name], timeout=5).stats() or {}
    return replies.get(name) or {}


@pytest.mark.slow
@pytest.mark.needs_services
def test_a_worker_with_no_pool_flags_holds_its_engines_window_and_c_overrides_it(model):
    call_s, inputs = 0.2, 50
    spec = {model: {"engine": "fixed_cost", "max_inputs": inputs, "call_s": call_s}}
    expected = inputs * (3 + math.ceil(settings.WORKER_REFILL_S / call_s))
    run = uuid.uuid4().hex[:6]
    with celery_worker(spec, [f"gpu.{model}"], concurrency=None, name=f"sized-{run}"), \
            celery_worker(spec, [f"gpu.{model}"], concurrency=20, name=f"flagged-{run}"):
        wait_for(lambda: len(live_workers(model)) == 2, timeout=90, what="both workers")
        host = subprocess.run(["hostname"], capture_output=True, text=True).stdout.strip()
        sized = wait_for(lambda: _stats(f"sized-{run}@{host}"), timeout=30, what="the sized worker's stats")
        flagged = wait_for(lambda: _stats(f"flagged-{run}@{host}"), timeout=30, what="the other's stats")
    assert sized["pool"]["max-concurrency"] == expected and sized["prefetch_count"] == expected
    assert "thread" in sized["pool"]["implementation"]
    assert flagged["pool"]["max-concurrency"] == 20 and flagged["prefetch_count"] == 20


@pytest.mark.slow
@pytest.mark.needs_services
def test_a_worker_sent_sigterm_finishes_what_it_holds_and_the_rest_is_served_once_elsewhere(model, tmp_path):
    """Batches of 4 taking 1.5 s, a window of 16 (sizing.py): SIGTERM while it holds
    a running batch and three waiting ones. It exits once they are done (Celery's warm
    shutdown); the 20 requests it never took stay queued, and a worker started
    afterwards serves them. Each of the 32 ends with exactly one done event."""
    backend = CeleryBackend()
    spec = {model: {"engine": "fixed_cost", "max_inputs": 4, "call_s": 1.5}}
    requests = [GenerationRequest(request_id=uuid.uuid4().hex, model=model, seed=1,
                                  messages=[{"role": "user", "content": f"stay {i}"}]) for i in range(32)]
    log = tmp_path / "first.log"
    with log.open("w") as out, celery_worker(spec, [f"gpu.{model}"], concurrency=None, name="first",
                                             stdout=out) as first:
        wait_for(lambda: live_workers(model), timeout=90, what="the first worker")
        for request in requests:
            backend.submit(request)
        wait_for(lambda: any(h["running"] for h in live_workers(model)), timeout=30,
                 what="the first worker to start a batch")
        first.send_signal(signal.SIGTERM)
        assert first.wait(60) == 0
    served_first = sum(backend.log.final(r.request_id) is not None for r in requests)
    assert 4 <= served_first < len(requests), log.read_text()
    with celery_worker(spec, [f"gpu.{model}"], concurrency=None, name="second"):
        for i, request in enumerate(requests):
            events = list(backend.events(request.request_id, timeout_s=60))
            assert events[-1]["type"] == "done", events
            assert events[-1]["result"]["text"] == f"stay {i}"[::-1]
            raw = backend.log.read(request.request_id, "0", 0)  # [] once a minute past its result
            assert raw == [] or sum(e["type"] in ("done", "error") for _, e in raw) == 1, raw
