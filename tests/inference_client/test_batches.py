"""The Batch API through the official SDK: files, batches, output files, bad files."""

import io
import json

import openai
import pytest

from inference_client.models import Batch, BatchLine
from tests.inference_client.conftest import EMBED, MODEL, make_key
from tests.polling import wait_for

pytestmark = pytest.mark.needs_services  # the live gateway, a Celery worker, Redis, the object store


def _line(i, text, **body):
    return {"custom_id": f"req-{i}", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": MODEL, "messages": [{"role": "user", "content": text}], **body}}


def _jsonl(lines) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def _sdk(base, key):
    return openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0)


def test_should_run_every_line_once_and_return_output_and_error_files(live, batch_worker):
    key, raw = make_key("paid")
    client = _sdk(live, raw)
    lines = [_line(i, f"line {i}") for i in range(5)] + [_line(5, "too long", max_tokens=3)]
    lines.append(_line(6, "x", temperature=9))  # valid JSON, a bad body: refused at upload
    with pytest.raises(openai.BadRequestError) as e:
        client.files.create(file=("in.jsonl", io.BytesIO(_jsonl(lines))), purpose="batch")
    body = e.value.body
    assert e.value.code == "invalid_file" and [x["line"] for x in body["errors"]] == [7]
    assert "temperature" in body["errors"][0]["message"]

    f = client.files.create(file=("in.jsonl", io.BytesIO(_jsonl(lines[:6]))), purpose="batch")
    assert f.purpose == "batch" and f.bytes == len(_jsonl(lines[:6]))
    batch = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                                  completion_window="24h", metadata={"job": "t"})
    assert batch.request_counts.total == 6
    done = wait_for(lambda: (b := client.batches.retrieve(batch.id)).status == "completed" and b,
                    timeout=60, what="the batch to complete")
    assert (done.request_counts.completed, done.request_counts.failed) == (6, 0)
    out = [json.loads(x) for x in client.files.content(done.output_file_id).text.splitlines()]
    by_id = {x["custom_id"]: x["response"]["body"] for x in out}
    assert by_id["req-3"]["choices"][0]["message"]["content"] == "3 enil"
    assert by_id["req-5"]["choices"][0]["finish_reason"] == "length"
    assert done.error_file_id is None
    assert BatchLine.objects.filter(batch_id=batch.id).count() == 6  # once each
    assert [b.id for b in client.batches.list()] == [batch.id]
    assert client.files.retrieve(f.id).filename == "in.jsonl"


@pytest.mark.parametrize(("data", "code"), [
    (b"not json\n", "invalid_file"),
    (_jsonl([_line(1, "a"), _line(1, "b")]), "invalid_file"),
    (_jsonl([{**_line(1, "a"), "url": "/v1/embeddings"}]), "invalid_file"),
    (_jsonl([{**_line(1, "a"), "url": "/v1/completions"}, _line(2, "b")]), "invalid_file"),
    (_jsonl([{**_line(1, "a"), "body": {"model": EMBED, "messages": [{"role": "user", "content": "a"}]}}]),
     "invalid_file"),  # an embeddings model's chat
    (_jsonl([_line(1, "a", response_format={"type": "json_object"})]), "invalid_file"),  # not on fixed_cost
    (b"\n\n", "empty_file"),
])
def test_a_bad_input_file_is_refused_naming_its_lines(live, data, code):
    _, raw = make_key("paid")
    with pytest.raises(openai.BadRequestError) as e:
        _sdk(live, raw).files.create(file=("in.jsonl", io.BytesIO(data)), purpose="batch")
    assert e.value.code == code


def _embed_line(i, text, **body):
    return {"custom_id": f"emb-{i}", "method": "POST", "url": "/v1/embeddings",
            "body": {"model": EMBED, "input": text, **body}}


def test_should_run_embeddings_lines_on_the_real_model_with_the_same_vectors_as_the_live_endpoint(
        embedder, batch_worker):
    import base64

    import numpy as np

    _, raw = make_key("paid")
    client = _sdk(embedder, raw)
    bad = [_embed_line(0, "x"), {**_embed_line(1, "x"), "body": {"model": MODEL, "input": "x"}}]
    with pytest.raises(openai.BadRequestError) as e:  # a text model's embeddings
        client.files.create(file=("in.jsonl", io.BytesIO(_jsonl(bad))), purpose="batch")
    [error] = e.value.body["errors"]
    assert error["line"] == 2 and "serves /v1/chat/completions and /v1/completions only" in error["message"]

    texts = ["A cat sat on the mat.", "A kitten rested on the rug."]
    lines = [_embed_line(0, texts), _embed_line(1, texts[0], encoding_format="base64"),
             _embed_line(2, ["fine", "word " * 400])]  # over MiniLM's context: this line fails alone
    f = client.files.create(file=("in.jsonl", io.BytesIO(_jsonl(lines))), purpose="batch")
    batch = client.batches.create(input_file_id=f.id, endpoint="/v1/embeddings", completion_window="24h")
    done = wait_for(lambda: (b := client.batches.retrieve(batch.id)).status == "completed" and b,
                    timeout=60, what="the batch to complete")
    assert (done.request_counts.completed, done.request_counts.failed) == (2, 1)
    out = {x["custom_id"]: x["response"]["body"]
           for x in map(json.loads, client.files.content(done.output_file_id).text.splitlines())}
    pair = np.array([d["embedding"] for d in out["emb-0"]["data"]])
    assert pair.shape == (2, 384) and out["emb-0"]["model"] == EMBED
    assert out["emb-0"]["usage"]["prompt_tokens"] > 2
    one = np.frombuffer(base64.b64decode(out["emb-1"]["data"][0]["embedding"]), dtype="<f4")
    live = client.embeddings.create(model=EMBED, input=texts, encoding_format="float")
    # Batched otherwise than the lines were: llama.cpp sums in another order, equal up to float rounding.
    assert np.allclose(pair, [d.embedding for d in live.data], atol=1e-4)
    assert np.allclose(one, pair[0], atol=1e-4)
    [error] = map(json.loads, client.files.content(done.error_file_id).text.splitlines())
    assert (error["custom_id"], error["error"]["code"]) == ("emb-2", "context_length_exceeded")


def test_a_batch_refuses_a_file_of_another_endpoint_or_owner_and_cancel_keeps_finished_lines(
        live, batch_worker):
    _, raw = make_key("paid")
    client = _sdk(live, raw)
    f = client.files.create(file=("in.jsonl", io.BytesIO(_jsonl([_line(i, "abc") for i in range(3)]))),
                            purpose="batch")
    with pytest.raises(openai.BadRequestError) as e:
        client.batches.create(input_file_id=f.id, endpoint="/v1/completions", completion_window="24h")
    assert e.value.code == "endpoint_mismatch"
    _, other = make_key("paid")
    with pytest.raises(openai.NotFoundError):
        _sdk(live, other).batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                                         completion_window="24h")
    batch = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                                  completion_window="24h")
    wait_for(lambda: client.batches.retrieve(batch.id).status == "completed", timeout=60, what="completion")
    with pytest.raises(openai.ConflictError):
        client.batches.cancel(batch.id)
    assert Batch.objects.get(pk=batch.id).completed == 3


def test_should_resume_a_batch_after_its_driver_and_worker_are_killed_without_losing_or_repeating_a_line(
        django_db_blocker, transactional_db, _clean_cache, settings):
    import os
    import signal
    import uuid

    from django.utils import timezone

    from inference_client.batch_job import batch_drive
    from inference_protocol.backend import live_workers
    from tests.inference_client.conftest import database_url, job_worker, stack_env
    from tests.inference_worker.workers import celery_worker, delete_queues
    from tests.livesubprocess import free_port, running_server

    slow = f"batch-slow-{uuid.uuid4().hex[:6]}"
    models = {slow: {"engine": "fixed_cost", "max_inputs": 2, "call_s": 0.3}}
    settings.INFERENCE_MODELS = models
    stack = {"INFERENCE_MODELS": json.dumps(models), "BATCH_LEASE_S": "1", "BATCH_WINDOW": "2"}
    env = stack_env(DATABASE_URL=database_url(django_db_blocker), **stack)
    lines = [{**_line(i, f"item {i}"), "body": {"model": slow, "messages": [
        {"role": "user", "content": f"item {i}"}]}} for i in range(12)]
    port = free_port()
    args = ["-m", "uvicorn", "config.asgi:application", "--port", str(port), "--lifespan", "off",
            "--log-level", "warning"]
    try:
        with celery_worker(models, [f"gpu.{slow}"], name="batch-a") as worker:
            wait_for(lambda: live_workers(slow), timeout=60, what="the first worker")
            with running_server(args, env, port) as server, \
                    job_worker(django_db_blocker, "batch_worker", **stack) as driver:
                _, raw = make_key("paid")
                client = _sdk(server.base, raw)
                f = client.files.create(file=("in.jsonl", io.BytesIO(_jsonl(lines))), purpose="batch")
                batch = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                                              completion_window="24h")
                wait_for(lambda: BatchLine.objects.filter(batch_id=batch.id).count() >= 2, timeout=30,
                         what="some lines to finish")
                os.kill(driver.pid, signal.SIGKILL)   # the batch worker, with the driver in it
                worker.kill()                         # and the GPU worker, with lines in flight
        stored = BatchLine.objects.filter(batch_id=batch.id).count()
        assert 2 <= stored < 12
        with celery_worker(models, [f"gpu.{slow}"], name="batch-b"):
            wait_for(lambda: live_workers(slow), timeout=60, what="a new worker")
            wait_for(lambda: Batch.objects.get(pk=batch.id).lease_until < timezone.now(), timeout=10,
                     what="the dead driver's lease to run out")
            assert batch_drive(batch.id) == "completed"   # what manage.py batch_worker runs
    finally:
        delete_queues([f"gpu.{slow}"])
    done = Batch.objects.get(pk=batch.id)
    assert (done.completed, done.failed) == (12, 0)
    rows = list(BatchLine.objects.filter(batch_id=batch.id).values_list("custom_id", "body"))
    assert sorted(c for c, _ in rows) == sorted(f"req-{i}" for i in range(12))  # each once
    for custom_id, body in rows:
        assert body["choices"][0]["message"]["content"] == f"item {custom_id[4:]}"[::-1]


@pytest.mark.django_db
def test_a_batch_over_the_accounts_enqueued_token_limit_is_refused_at_create(settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from core.error_codes import DomainError
    from inference_client.batches import batch_create, file_create

    settings.BATCH_DISPATCH = "none"
    settings.INFERENCE_MODELS = {MODEL: {"engine": "fixed_cost"}}
    key, _ = make_key("free")
    data = _jsonl([_line(i, "x" * 40, max_tokens=100) for i in range(10)])
    f = file_create(user=key.user, upload=SimpleUploadedFile("in.jsonl", data), purpose="batch")
    assert f.tokens >= 10 * 100
    settings.BATCH_ENQUEUED_TOKENS = {"free": int(f.tokens * 1.5), "paid": 10**9}
    batch_create(user=key.user, api_key=key, input_file_id=f.id, endpoint="/v1/chat/completions")
    with pytest.raises(DomainError) as e:  # the first one is still enqueued
        batch_create(user=key.user, api_key=key, input_file_id=f.id, endpoint="/v1/chat/completions")
    assert (e.value.status, e.value.code) == (400, "token_limit_exceeded")
    Batch.objects.update(status=Batch.Status.COMPLETED)
    batch_create(user=key.user, api_key=key, input_file_id=f.id, endpoint="/v1/chat/completions")
    # A browser session (no key) has its account's limit: a paid account's is far higher.
    from accounts.services import account_tier_set

    account_tier_set(user=key.user, tier="paid")
    for _ in range(2):
        batch_create(user=key.user, api_key=None, input_file_id=f.id, endpoint="/v1/chat/completions")


@pytest.mark.django_db
def test_lines_not_run_within_the_completion_window_are_reported_expired(settings):
    import datetime

    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.utils import timezone

    from inference_client.batch_job import batch_drive
    from inference_client.batches import batch_create, file_create, file_lines

    settings.BATCH_DISPATCH = "none"
    settings.INFERENCE_MODELS = {MODEL: {"engine": "fixed_cost"}}
    key, _ = make_key("paid")
    upload = SimpleUploadedFile("in.jsonl", _jsonl([_line(i, "a") for i in range(3)]))
    f = file_create(user=key.user, upload=upload, purpose="batch")
    batch = batch_create(user=key.user, api_key=key, input_file_id=f.id, endpoint="/v1/chat/completions")
    Batch.objects.filter(pk=batch.pk).update(expires_at=timezone.now() - datetime.timedelta(seconds=1))
    assert batch_drive(batch.pk) == "expired"
    batch.refresh_from_db()
    assert (batch.status, batch.completed, batch.failed, batch.output_file) == ("expired", 0, 3, None)
    errors = [json.loads(x) for x in file_lines(batch.error_file)]
    assert sorted(e["custom_id"] for e in errors) == ["req-0", "req-1", "req-2"]
    assert {e["error"]["code"] for e in errors} == {"batch_expired"}


def test_a_batch_whose_broker_is_away_pauses_without_losing_a_line_then_resumes(
        django_db_blocker, worker, transactional_db, settings):
    import subprocess
    import sys
    from urllib.parse import urlparse

    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.db import connection

    from inference_client.batch_job import batch_drive
    from inference_client.batches import batch_create, file_create
    from tests.inference_client.conftest import stack_env
    from tests.livesubprocess import ROOT
    from tests.tcpproxy import TcpProxy

    settings.BATCH_DISPATCH = "none"
    key, _ = make_key("paid")
    upload = SimpleUploadedFile("in.jsonl", _jsonl([_line(i, f"item {i}") for i in range(4)]))
    f = file_create(user=key.user, upload=upload, purpose="batch")
    batch = batch_create(user=key.user, api_key=key, input_file_id=f.id, endpoint="/v1/chat/completions")
    broker = urlparse(settings.CELERY_BROKER_URL)
    proxy = TcpProxy(broker.hostname, broker.port)
    with django_db_blocker.unblock():
        db = connection.settings_dict
    env = stack_env(DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
                    CELERY_BROKER_URL=f"{broker.scheme}://{broker.netloc.rsplit('@', 1)[0]}@127.0.0.1:"
                                      f"{proxy.port}{broker.path}", BATCH_DISPATCH="none")

    try:
        proxy.cut()
        out = subprocess.run([sys.executable, "manage.py", "batch_worker", "--once"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=90, check=True).stdout
    finally:
        proxy.close()
    assert f"batch {batch.id}: paused" in out
    paused = Batch.objects.get(pk=batch.id)  # not completed with its lines missing
    assert (paused.status, paused.completed, paused.lease_until, paused.output_file_id) == \
        ("in_progress", 0, None, None)
    assert batch_drive(batch.id) == "completed"  # the next poll, with the broker back
    done = Batch.objects.get(pk=batch.id)
    assert (done.completed, done.failed) == (4, 0)
    assert sorted(BatchLine.objects.filter(batch=done).values_list("custom_id", flat=True)) == \
        [f"req-{i}" for i in range(4)]
