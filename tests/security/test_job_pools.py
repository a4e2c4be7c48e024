"""M3: no user exhausts the shared pools of long jobs.

- Each user has at most EVAL_MAX_ACTIVE_RUNS unfinished evaluation runs,
  BATCH_MAX_ACTIVE unfinished batches and EVAL_MAX_ACTIVE_IMPORTS background
  imports: a create past it is a 429 too_many_active_jobs naming the limit, the
  count and the setting, with a Retry-After. Counted under a lock on the user's
  row, so 50 concurrent creates (real requests to a live server, PostgreSQL)
  make exactly the cap, while /v1/chat/completions and /healthz keep answering.
- A driver waiting on a slow model holds no database connection (the pool's
  stats, sampled while its window runs).
- With services no server drives a job, not even on a read: the worker
  processes (`manage.py eval_worker`, `batch_worker`) do.
"""

import concurrent.futures
import datetime
import io
import json
import threading
import time
import uuid

import httpx
import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from core.redis import get_redis
from evals.datasets import dataset_create, dataset_version_create
from evals.import_job import dataset_import_run
from evals.models import DatasetImport, EvalResult, EvalRun
from evals.run_job import evalrun_drive
from evals.runs import evalrun_create
from inference_client.admission import inflight_key
from inference_client.batch_files import file_create
from inference_client.batch_job import batch_drive
from inference_client.batches import batch_create
from inference_client.models import Batch
from inference_client.usage import USAGE_STREAM
from inference_protocol.backend import get_backend
from tests.evals.conftest import rows, use_backend
from tests.factories import ApiKeyFactory, PromptFactory, PromptVersionFactory, UserFactory
from tests.inference_client.conftest import (
    gateway_worker,
    job_worker,
    stack_env,
    uvicorn_server,
    wait_for_worker,
)
from tests.polling import wait_for

# Its own model name: its worker queue (gpu.<model>) is shared with no other suite.
MODEL = "pools-fixed-cost"
MODELS = {MODEL: {"engine": "fixed_cost", "max_inputs": 50, "call_s": 0.05}}
STACK = {"INFERENCE_MODELS": json.dumps(MODELS)}
BURST = 50


@pytest.fixture(scope="module")
def gateway_url(django_db_setup, django_db_blocker):
    """A live server (services config: it drives no job) and a Celery worker of MODEL."""
    with gateway_worker(MODEL, concurrency=16, name="pools", env=stack_env(**STACK)), \
            uvicorn_server(django_db_blocker, **STACK) as base:
        yield base


@pytest.fixture
def live(gateway_url, transactional_db, settings):
    settings.INFERENCE_MODELS = MODELS
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    wait_for_worker(MODEL)  # its heartbeat is back after the per-test Redis flush
    yield gateway_url
    # The server's usage writer stores every record before the tables are flushed.
    redis = get_redis()
    wait_for(lambda: redis.zcard(inflight_key(MODEL)) == 0 and redis.xlen(USAGE_STREAM) == 0, timeout=10,
             what="the usage writer to store every record")


def _eval_setup(user, model: str, n_rows: int = 2):
    dataset = dataset_create(owner=user, name="pool")
    dataset_version_create(dataset=dataset, author=user,
                           add=rows(*[(f"row {i}", f"row {i}"[::-1]) for i in range(n_rows)]))
    version = PromptVersionFactory(prompt=PromptFactory(owner=user), body="{{q}}", model_name=model)
    return dataset, version


def _run_body(dataset, version) -> dict:
    return {"dataset": str(dataset.pk), "evaluators": ["exact"],
            "columns": [{"prompt": str(version.prompt_id), "version": str(version.pk)}]}


def _assert_refused(response, *, limit: int, setting: str) -> None:
    error = response.json()["error"]
    assert (response.status_code, error["code"]) == (429, "too_many_active_jobs"), response.text
    assert (error["limit"], error["active"], error["setting"]) == (limit, limit, setting)
    assert setting in error["message"] and int(response.headers["Retry-After"]) > 0


def _burst(base: str, raw_key: str, path: str, body: dict) -> list[httpx.Response]:
    """BURST identical POSTs at once (a barrier releases them together)."""
    gate = threading.Barrier(BURST)
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {raw_key}"}, timeout=60,
                      limits=httpx.Limits(max_connections=BURST + 5)) as client:
        def post(_):
            gate.wait()
            return client.post(path, json=body)

        with concurrent.futures.ThreadPoolExecutor(BURST) as pool:
            return list(pool.map(post, range(BURST)))


class _Prober(threading.Thread):
    """Calls /v1/chat/completions and /healthz in turn until stopped, keeping
    (started, ended, path, status) of each call."""

    def __init__(self, base: str, raw_key: str):
        super().__init__(daemon=True)
        self.base, self.raw_key = base, raw_key
        self.calls: list[tuple[float, float, str, int]] = []
        self.stop = threading.Event()

    def run(self):
        body = {"model": MODEL, "messages": [{"role": "user", "content": "still here"}]}
        with httpx.Client(base_url=self.base, timeout=15) as client:
            while not self.stop.is_set():
                for path in ("/v1/chat/completions", "/healthz"):
                    started = time.monotonic()
                    try:
                        auth = {"Authorization": f"Bearer {self.raw_key}"}
                        status = (client.post(path, json=body, headers=auth) if path.startswith("/v1")
                                  else client.get(path)).status_code
                    except httpx.HTTPError:
                        status = 0
                    self.calls.append((started, time.monotonic(), path, status))


@pytest.mark.needs_services
def test_fifty_concurrent_run_creates_of_one_user_make_exactly_the_cap_while_chat_answers(live):
    user = UserFactory()
    _, raw = ApiKeyFactory.create_with_raw(user=user, tier="paid")
    dataset, version = _eval_setup(user, MODEL)
    prober = _Prober(live, raw)
    prober.start()
    wait_for(lambda: len(prober.calls) >= 2, timeout=30, what="the prober's first calls")
    began = time.monotonic()
    responses = _burst(live, raw, "/api/evals/runs", _run_body(dataset, version))
    ended = time.monotonic()
    prober.stop.set()
    prober.join(30)

    cap = django_settings.EVAL_MAX_ACTIVE_RUNS
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [201] * cap + [429] * (BURST - cap), statuses
    for refused in (r for r in responses if r.status_code == 429):
        _assert_refused(refused, limit=cap, setting="EVAL_MAX_ACTIVE_RUNS")
    assert EvalRun.objects.filter(owner=user).count() == cap
    # The gateway kept answering meanwhile: every call of the prober, including
    # those made while the burst ran, was answered 200.
    during = [c for c in prober.calls if c[0] < ended and c[1] > began]
    assert {path for *_, path, _ in during} == {"/v1/chat/completions", "/healthz"}, prober.calls
    assert all(status == 200 for *_, status in prober.calls), prober.calls


@pytest.mark.needs_services
def test_fifty_concurrent_batch_creates_of_one_account_make_exactly_the_cap(live):
    user = UserFactory()
    _, raw = ApiKeyFactory.create_with_raw(user=user, tier="paid")
    line = {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "max_tokens": 4}}
    upload = httpx.post(f"{live}/v1/files", headers={"Authorization": f"Bearer {raw}"},
                        data={"purpose": "batch"},
                        files={"file": ("in.jsonl", io.BytesIO(json.dumps(line).encode() + b"\n"))})
    assert upload.status_code == 200, upload.text
    responses = _burst(live, raw, "/v1/batches", {"input_file_id": upload.json()["id"],
                                                  "endpoint": "/v1/chat/completions",
                                                  "completion_window": "24h"})
    cap = django_settings.BATCH_MAX_ACTIVE
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * cap + [429] * (BURST - cap), statuses
    for refused in (r for r in responses if r.status_code == 429):
        _assert_refused(refused, limit=cap, setting="BATCH_MAX_ACTIVE")
    assert Batch.objects.filter(user=user).count() == cap


def test_background_imports_past_the_cap_are_refused_until_one_ends(user, settings):
    settings.EVAL_IMPORT_BACKGROUND_BYTES = 100
    settings.EVAL_MAX_ACTIVE_IMPORTS = 2
    settings.EVAL_DISPATCH = "none"  # the imports wait for a driver: this test is one
    client = APIClient()
    client.force_login(user)
    dataset = client.post("/api/datasets/", {"name": "imports"}, format="json").json()
    text = "q,expected\n" + "".join(f"row {i},{i}\n" for i in range(50))

    def start():
        return client.post(f"/api/datasets/{dataset['id']}/import", {"text": text, "format": "csv"},
                           format="json")

    first, second, third = start(), start(), start()
    assert (first.status_code, second.status_code) == (202, 202)
    _assert_refused(third, limit=2, setting="EVAL_MAX_ACTIVE_IMPORTS")
    assert DatasetImport.objects.filter(author=user).count() == 2
    assert dataset_import_run(first.json()["import"]["id"]) == "done"
    assert start().status_code == 202  # a slot freed


# -- no connection held while waiting ------------------------------------------

def _held() -> int:
    stats = connection.pool.get_stats()
    return stats["pool_size"] - stats["pool_available"]


def _share_holding_while(drive) -> tuple[float, str]:
    """Drive a job on a thread of this process and sample the pool meanwhile
    (from this thread, which holds no connection): the share of samples in which
    more connections were checked out than before it started, and what the
    driver returned."""
    connection.close()  # this thread's own goes back to the pool
    baseline = _held()
    outcome = []

    def run():
        try:
            outcome.append(drive())
        finally:
            connection.close()

    driver = threading.Thread(target=run)
    driver.start()
    samples = []
    while driver.is_alive():
        samples.append(_held() > baseline)
        driver.join(0.02)
    assert outcome, "the driver raised"
    assert len(samples) > 20, "the job ran too briefly to sample"
    return sum(samples) / len(samples), outcome[0]


@pytest.fixture
def slow_model(settings):
    """A model whose one call (every row at once) takes 2 s, on the in-process
    worker of this process: a window waits on it."""
    model = f"slow-{uuid.uuid4().hex[:6]}"
    settings.INFERENCE_MODELS = {**settings.INFERENCE_MODELS,
                                 model: {"engine": "fixed_cost", "max_inputs": 8, "call_s": 2.0}}
    settings.EVAL_NO_WORKER_WAIT_S = 0
    settings.EVAL_DISPATCH = settings.BATCH_DISPATCH = "none"
    use_backend(settings, "inference_worker.inprocess.InProcessBackend")
    yield model
    get_backend.cache_clear()  # the backend chosen here goes with the test


@pytest.mark.needs_services  # the connection pool (PostgreSQL)
def test_a_run_waiting_on_a_slow_model_holds_no_database_connection(transactional_db, slow_model):
    user = UserFactory()
    dataset, version = _eval_setup(user, slow_model, n_rows=3)
    run = evalrun_create(user=user, dataset_id=dataset.pk, evaluators=["exact"],
                         columns=_run_body(dataset, version)["columns"])
    share, status = _share_holding_while(lambda: evalrun_drive(run.pk))
    assert status == "done" and EvalResult.objects.filter(run=run, passed=True).count() == 3
    # Before: the driver held its connection the whole time (share 1.0). Now only
    # its short bursts (claim, load, a check each second, the stores) take one.
    assert share < 0.5, share


@pytest.mark.needs_services
def test_a_batch_waiting_on_a_slow_model_holds_no_database_connection(transactional_db, slow_model):
    user = UserFactory()
    key, _ = ApiKeyFactory.create_with_raw(user=user, tier="paid")
    messages = [{"role": "user", "content": "abc"}]
    lines = b"".join(json.dumps({"custom_id": f"l{i}", "method": "POST", "url": "/v1/chat/completions",
                                 "body": {"model": slow_model, "messages": messages}}).encode() + b"\n"
                     for i in range(3))
    f = file_create(user=user, upload=SimpleUploadedFile("in.jsonl", lines), purpose="batch")
    batch = batch_create(user=user, api_key=key, input_file_id=f.id, endpoint="/v1/chat/completions")
    share, status = _share_holding_while(lambda: batch_drive(batch.pk))
    assert status == "completed" and Batch.objects.get(pk=batch.pk).completed == 3
    assert share < 0.5, share


# -- who drives ------------------------------------------------------------------

def _backdated(model, pk) -> None:
    """As if created long ago with no live lease: a read would resume it, were
    servers drivers."""
    model.objects.filter(pk=pk).update(created_at=timezone.now() - datetime.timedelta(hours=1),
                                       lease_until=None)


@pytest.mark.needs_services
def test_with_services_a_run_is_driven_by_the_eval_worker_process_never_by_the_server(
        live, django_db_blocker):
    assert django_settings.EVAL_DISPATCH == "none"  # the default where a broker is set
    user = UserFactory()
    _, raw = ApiKeyFactory.create_with_raw(user=user, tier="paid")
    dataset, version = _eval_setup(user, MODEL)
    auth = {"Authorization": f"Bearer {raw}"}
    created = httpx.post(f"{live}/api/evals/runs", json=_run_body(dataset, version), headers=auth, timeout=30)
    assert created.status_code == 201, created.text
    run_id = created.json()["id"]
    _backdated(EvalRun, run_id)
    for _ in range(2):  # reads of an unheld run: a server that drove would resume it here
        assert httpx.get(f"{live}/api/evals/runs/{run_id}", headers=auth, timeout=30).status_code == 200
    before = timezone.now()
    run = EvalRun.objects.get(pk=run_id)
    assert (run.status, run.lease_owner, run.started_at) == ("queued", "", None)

    with job_worker(django_db_blocker, "eval_worker", **STACK) as proc:
        wait_for(lambda: EvalRun.objects.get(pk=run_id).status == "done", timeout=90,
                 what="the eval worker to finish the run")
    run = EvalRun.objects.get(pk=run_id)
    assert run.lease_owner.split(":")[1] == str(proc.pid) and run.started_at >= before
    assert run.completed == 2 and run.failed == 0


@pytest.mark.needs_services
def test_with_services_a_batch_is_driven_by_the_batch_worker_process_never_by_the_server(
        live, django_db_blocker):
    assert django_settings.BATCH_DISPATCH == "none"
    user = UserFactory()
    _, raw = ApiKeyFactory.create_with_raw(user=user, tier="paid")
    auth = {"Authorization": f"Bearer {raw}"}
    line = {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": MODEL, "messages": [{"role": "user", "content": "abc"}]}}
    f = httpx.post(f"{live}/v1/files", headers=auth, data={"purpose": "batch"},
                   files={"file": ("in.jsonl", io.BytesIO(json.dumps(line).encode() + b"\n"))}).json()
    body = {"input_file_id": f["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"}
    created, dropped = (httpx.post(f"{live}/v1/batches", headers=auth, timeout=30, json=body) for _ in "ab")
    assert (created.status_code, dropped.status_code) == (200, 200), created.text
    batch_id, dropped_id = created.json()["id"], dropped.json()["id"]
    _backdated(Batch, batch_id)
    read = httpx.get(f"{live}/v1/batches/{batch_id}", headers=auth, timeout=30)
    assert read.json()["status"] == "validating"
    # A cancel of a batch no driver holds leaves its end to the worker too.
    cancel = httpx.post(f"{live}/v1/batches/{dropped_id}/cancel", headers=auth, timeout=30)
    assert cancel.json()["status"] == "cancelling"
    before = timezone.now()
    batch = Batch.objects.get(pk=batch_id)
    assert (batch.status, batch.lease_owner, batch.in_progress_at) == ("validating", "", None)
    assert Batch.objects.get(pk=dropped_id).lease_owner == ""

    with job_worker(django_db_blocker, "batch_worker", **STACK) as proc:
        wait_for(lambda: Batch.objects.get(pk=batch_id).status == "completed"
                 and Batch.objects.get(pk=dropped_id).status == "cancelled", timeout=90,
                 what="the batch worker to finish both batches")
    batch, dropped = Batch.objects.get(pk=batch_id), Batch.objects.get(pk=dropped_id)
    assert batch.lease_owner.split(":")[1] == str(proc.pid) and batch.in_progress_at >= before
    assert batch.completed == 1
    assert dropped.lease_owner.split(":")[1] == str(proc.pid) and dropped.completed == 0

