"""Batch API lines through the gateway's batch lane (inference_client.batch_lane):
the /v1 admission rules at batch priority (the batch key's buckets, less the
share kept for its interactive calls), a usage record per line, the prompt cache;
and at most two device calls' worth of lines started at once."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from core.redis import get_redis
from inference_client import admission
from inference_client.batch_files import file_create, line_request_id
from inference_client.batch_job import batch_drive
from inference_client.batches import batch_create
from inference_client.models import Batch, BatchLine, UsageRecord
from inference_protocol.backend import get_backend
from inference_worker.inprocess import InProcessBackend
from inference_worker.runtime import get_scheduler
from tests.evals.conftest import use_backend
from tests.inference_client.conftest import make_key

pytestmark = pytest.mark.needs_services  # admission and the cache live in Redis

MODEL = "lane-batch"


def _batch(key, texts, **body):
    data = b"".join(json.dumps({"custom_id": f"c{i}", "method": "POST", "url": "/v1/chat/completions",
                                "body": {"model": MODEL, "messages": [{"role": "user", "content": t}],
                                         **body}}).encode() + b"\n" for i, t in enumerate(texts))
    f = file_create(user=key.user, upload=SimpleUploadedFile("in.jsonl", data), purpose="batch")
    return batch_create(user=key.user, api_key=key, input_file_id=f.id, endpoint="/v1/chat/completions")


def _limits(settings, *, rpm: int, tpm: int):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "paid": {"requests_per_min": rpm, "tokens_per_min": tpm}}


@pytest.fixture
def lane(settings):
    settings.INFERENCE_MODELS = {MODEL: {"engine": "fixed_cost", "max_inputs": 2, "call_s": 0.05}}
    settings.BATCH_DISPATCH = "none"
    settings.BATCH_WINDOW = 16
    yield
    get_backend.cache_clear()  # the backend a test chose goes with it


class Started(InProcessBackend):
    """The real in-process worker, noting how many batch lines its scheduler
    holds (waiting or running) as each one arrives."""

    held: list = []

    def submit(self, request):
        super().submit(request)
        stats = get_scheduler(request.model).stats()
        self.held.append(stats.queue_batch + stats.running)


def test_lines_are_charged_to_the_batch_key_recorded_and_cached(transactional_db, lane, settings):
    use_backend(settings, "inference_worker.inprocess.InProcessBackend")
    _limits(settings, rpm=20, tpm=100_000)
    key, _ = make_key("paid")
    first = _batch(key, ["abc", "hello", "xyz"], temperature=0)
    assert batch_drive(first.pk) == "completed"
    ids = {line_request_id(first.pk, f"c{i}") for i in range(3)}
    records = UsageRecord.objects.filter(request_id__in=ids)
    assert {(r.user_id, r.api_key_id, r.tier, r.status, r.model, r.cache_hit) for r in records} == {
        (key.user_id, key.pk, "paid", "ok", MODEL, "")}
    assert len(records) == 3 and all(r.completion_tokens > 0 for r in records)
    # One request each from the key's own bucket (what /v1 calls with it take).
    bucket = admission.key_buckets(key_id=f"k{key.pk}", tier="paid", tokens=0)[:1]
    assert admission.peek(buckets=bucket, redis=get_redis())[0]["remaining"] == 17

    again = _batch(key, ["abc", "hello", "xyz"], temperature=0)  # the same lines: the prompt cache's
    assert batch_drive(again.pk) == "completed"
    cached = UsageRecord.objects.filter(request_id__in={line_request_id(again.pk, f"c{i}") for i in range(3)})
    assert {r.cache_hit for r in cached} == {"exact"} and len(cached) == 3
    bodies = {line.custom_id: line.body for line in BatchLine.objects.filter(batch=again)}
    assert bodies["c1"]["choices"][0]["message"]["content"] == "olleh"


def test_a_line_over_the_keys_batch_share_fails_as_on_v1_and_the_rest_run(transactional_db, lane, settings):
    use_backend(settings, "inference_worker.inprocess.InProcessBackend")
    _limits(settings, rpm=100, tpm=400)
    key, _ = make_key("paid")
    batch = _batch(key, ["small", "x" * 2000], max_tokens=16)  # the second needs more than the whole budget
    assert batch_drive(batch.pk) == "completed"
    lines = {line.custom_id: line for line in BatchLine.objects.filter(batch=batch)}
    assert lines["c0"].status_code == 200
    assert (lines["c1"].status_code, lines["c1"].body["error"]["code"]) == (400, "too_many_tokens")
    assert (Batch.objects.get(pk=batch.pk).completed, Batch.objects.get(pk=batch.pk).failed) == (1, 1)


def test_at_most_two_calls_of_lines_are_started_at_once(transactional_db, lane, settings):
    backend = use_backend(settings, "tests.inference_client.test_batch_lane.Started")
    backend.held.clear()
    key, _ = make_key("paid")
    batch = _batch(key, [f"line {i}" for i in range(40)])
    assert batch_drive(batch.pk) == "completed"
    assert Batch.objects.get(pk=batch.pk).completed == 40
    # Twice the scheduler's max batch size (2), not BATCH_WINDOW (16) or two of them.
    assert len(backend.held) == 40 and max(backend.held) <= 4


def test_the_batch_worker_runs_at_a_lower_cpu_priority(django_db_blocker):
    import psutil

    from tests.inference_client.conftest import job_worker
    from tests.polling import wait_for

    with job_worker(django_db_blocker, "batch_worker", BATCH_WORKER_NICE="7") as proc:
        # Set before its first poll: from then on its drivers yield the CPU to serve and the workers.
        assert wait_for(lambda: psutil.Process(proc.pid).nice() == 7, timeout=30, what="the niceness")
