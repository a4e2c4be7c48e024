"""The readiness gate and a canary rollout on the live stack: real workers that
fetch and verify model-version checkpoints from the swarm, a uvicorn gateway,
config documents over Redis.

- A worker whose checkpoint does not verify never reports ready, and no request
  reaches its version, though the document gives it half the traffic. The good
  worker then applies a document that changes its scheduler settings and an
  engine option under traffic, without a restart and without losing a request.
- A rollout to a version whose engine fails 30% of requests rolls back after one
  window, and paid traffic's errors stay within the canary's share; its first
  driver is killed mid-window, and a second one resumes it from the recorded step.
"""

from __future__ import annotations

import collections
import concurrent.futures
import json
import os
import subprocess
import sys
import threading
import time
import uuid

import httpx
import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from config.celery import app as celery_app
from core.blobstore import get_blob_store
from inference_client.control import documents
from inference_client.models import ControlEvent, Rollout, UsageRecord
from inference_protocol import config
from inference_protocol.backend import live_workers
from inference_protocol.checkpoints import Manifest, manifest_key, manifest_signed
from inference_protocol.heartbeat import FAILED, read_nodes
from tests.inference_client.conftest import make_key, uvicorn_server
from tests.inference_worker.workers import ROOT, celery_worker, delete_queues
from tests.polling import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.needs_services]
ENGINE = {"engine": "fixed_cost", "max_inputs": 16, "call_s": 0.01}


@pytest.fixture
def stack_env(monkeypatch, origin, tmp_path, settings):
    """Workers and gateways started here: S3 through the origin proxy, a fresh
    cache, and config documents in a namespace of this test's own (the session's
    shared gateway and worker never see them)."""
    settings.CONFIG_NAMESPACE = f"config-test-{uuid.uuid4().hex[:8]}"
    for name, value in {"CONFIG_NAMESPACE": settings.CONFIG_NAMESPACE, "S3_ENDPOINT_URL": origin.url,
                        "MODEL_CACHE_DIR": str(tmp_path / "cache"),
                        "SWARM_LISTEN": "127.0.0.1:0", "SWARM_ADVERTISE_HOST": "127.0.0.1",
                        "CONFIG_POLL_S": "0.5"}.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def model(transactional_db, publish):
    name = f"ro-{uuid.uuid4().hex[:8]}"
    for version in ("v1", "v2"):
        publish({"weights.bin": 50_000}, model=name, version=version)
    yield name
    delete_queues([f"gpu.{name}@v1", f"gpu.{name}@v2"])
    config.state().reset()


def publish_models(name: str, versions: dict, **rollout) -> None:
    content = config.bootstrap_content(settings)
    content["models"] = {name: {**ENGINE, "versions": versions}}
    content["rollout"].update(rollout)
    documents.config_publish(content=content, actor="tests")


def ask(base: str, key: str, name: str, content: str | None = None) -> int:
    body = {"model": name, "messages": [{"role": "user", "content": content or uuid.uuid4().hex}],
            "max_tokens": 4, "temperature": 1.0}
    return httpx.post(f"{base}/v1/chat/completions", json=body, timeout=30,
                      headers={"Authorization": f"Bearer {key}"}).status_code


def messages_in(queue: str) -> int:
    with celery_app.connection_for_write() as conn:
        return conn.default_channel.queue_declare(queue, passive=True).message_count


def test_should_route_nothing_to_a_version_whose_checkpoint_does_not_verify(model, stack_env, tmp_path,
                                                                             django_db_blocker):
    manifest = json.loads(get_blob_store().get(manifest_key(model, "v2")))
    del manifest["signature"]
    store = get_blob_store()
    real = manifest["files"][0]["sha256"]
    manifest["files"][0]["sha256"] = "1" * 64  # the bytes no longer match what the (signed) manifest says
    signed = manifest_signed(Manifest.from_dict(manifest), settings.CONFIG_SIGNING_KEY)
    store.put(manifest_key(model, "v2"), signed)
    store.copy(f"sha256/{real}", "sha256/" + "1" * 64)
    publish_models(model, {"v1": 50, "v2": 50})
    _, key = make_key("paid")
    with open(tmp_path / "good.log", "w") as good_log, open(tmp_path / "corrupt.log", "w") as corrupt_log, \
            celery_worker({}, [f"gpu.{model}@v1"], concurrency=16, name="good", stdout=good_log), \
            celery_worker({}, [f"gpu.{model}@v2"], concurrency=16, name="corrupt", stdout=corrupt_log):
        wait_for(lambda: live_workers(f"{model}@v1"), timeout=60, what="v1 ready")
        # the worker took its spec from the signed document (it names the model, not its environment)
        assert [r["config"] for r in live_workers(f"{model}@v1")] == [1]
        label = f"{model}@v2"
        try:
            entry = wait_for(lambda: next((n["checkpoints"][label] for n in read_nodes()
                                           if n["checkpoints"].get(label, {}).get("state") == FAILED), None),
                             timeout=60, what="v2's fetch to fail")
        except TimeoutError:  # seen once on a loaded CI run: say what the worker was doing
            log = (tmp_path / "corrupt.log").read_text()[-4000:]
            seen = [n["checkpoints"][label] for n in read_nodes() if label in n["checkpoints"]]
            raise AssertionError(f"v2's fetch did not fail within 60 s (its node records: {seen}); "
                                 f"the corrupt worker's log ends:\n{log}") from None
        assert "does not match" in entry["reason"]
        with uvicorn_server(django_db_blocker) as base:
            statuses = [ask(base, key, model) for _ in range(30)]
            assert statuses == [200] * 30
            wait_for(lambda: UsageRecord.objects.filter(model=model).count() == 30, timeout=10,
                     what="the usage records")
            assert set(UsageRecord.objects.filter(model=model).values_list("version", flat=True)) == {"v1"}
            assert live_workers(f"{model}@v2") == [] and messages_in(f"gpu.{model}@v2") == 0
            long_prompt = "x" * 100
            assert ask(base, key, model, long_prompt) == 200

            # Under traffic, a document changes a scheduler setting and an engine option of the
            # running worker: it applies both without a restart, and no request is lost.
            stop, statuses = threading.Event(), []

            def traffic():
                while not stop.is_set():
                    statuses.append(ask(base, key, model))
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                for _ in range(8):
                    pool.submit(traffic)
                try:
                    wait_for(lambda: len(statuses) > 20, timeout=10, interval=0.05, what="traffic")
                    documents.config_publish(content=documents.content_with(documents.current_content(), [
                        f"models.{model}.scheduler.max_batch_size=3",      # the scheduler's cap: 16 -> 3
                        f"models.{model}.context_window=40"]), actor="tests")  # an engine option
                    started = time.monotonic()
                    record = wait_for(lambda: next((r for r in live_workers(f"{model}@v1")
                                                    if r["engine_config"] == 2), None),
                                      timeout=3, interval=0.05, what="the worker to rebuild on document 2")
                    # picked up within 2 s (+ one heartbeat interval to report it)
                    assert time.monotonic() - started < 2 + 0.5
                    served = len(statuses)
                    wait_for(lambda: len(statuses) > served + 20, timeout=10, interval=0.05, what="traffic")
                finally:
                    stop.set()
            assert statuses.count(200) == len(statuses), sorted(set(statuses))  # none lost
            assert record["config"] == 2 and record["max_batch_size"] == 3 and not record["engine_error"]
            # the new engine's context window refuses what the old one served
            assert ask(base, key, model, long_prompt) == 400
            # ...and only the new scheduler's batches are reported: at most 3
            assert max(map(int, live_workers(f"{model}@v1")[0]["batch_sizes"])) <= 3

            # A scheduler setting alone is applied in place: no new engine.
            documents.config_publish(content=documents.content_with(documents.current_content(), [
                f"models.{model}.scheduler.max_batch_size=5"]), actor="tests")
            record = wait_for(lambda: next((r for r in live_workers(f"{model}@v1")
                                            if r["config"] == 3), None),
                              timeout=3, interval=0.05, what="the worker to apply document 3")
            assert record["max_batch_size"] == 5 and record["engine_config"] == 2


def test_should_roll_back_a_canary_that_fails_30_percent_within_one_window(model, stack_env, tmp_path,
                                                                           django_db_blocker):
    """The rollout's first driver (a manage.py deploy process) is killed (-9) during the
    first step's window; a second driver (deploy --resume) takes over once its lease
    lapses, goes on from the recorded step without publishing it again, and rolls back."""
    window_s = 3.0
    # Which requests fail is a hash of their (random) ids, so a window of n canary
    # requests passes by chance with probability 0.7^n: at least 20 (< 0.1%), not 3
    # (34%; a CI run once stepped to 50% that way).
    publish_models(model, {"v1": 100, "v2": {"weight": 0, "fail_rate": 0.3}},
                   window_s=window_s, min_requests=20, ready_timeout_s=60)
    _, key = make_key("paid")
    db = connection.settings_dict
    database_url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    driver_env = dict(os.environ, DATABASE_URL=database_url, ROLLOUT_LEASE_S="1", LOG_LEVEL="WARNING")
    # The first driver starts with the workers (it waits for them to be ready). The
    # workers log each task: to files, as a pipe nothing reads fills and blocks them.
    with open(tmp_path / "driver.log", "w+") as log, \
            open(tmp_path / "stable.log", "w") as stable_log, \
            open(tmp_path / "canary.log", "w") as canary_log, \
            celery_worker({}, [f"gpu.{model}@v1"], concurrency=16, name="stable", stdout=stable_log), \
            celery_worker({}, [f"gpu.{model}@v2"], concurrency=16, name="canary", stdout=canary_log):
        driver = subprocess.Popen(
            [sys.executable, "manage.py", "deploy", "--model", model, "--version", "v2",
             "--steps", "10,50,100", "--created-by", "tests"],
            cwd=ROOT, env=driver_env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: ControlEvent.objects.filter(action="rollout_step",
                                                         target__contains=f":{model}@v2").exists(),
                     timeout=90, interval=0.05, what="the first step")
        except TimeoutError:
            log.seek(0)
            raise AssertionError(f"the driver published no step:\n{log.read()}") from None
        finally:
            driver.kill()  # SIGKILL, in the first step's window: no chance to clean up
            driver.wait()
        first = Rollout.objects.get(model=model)
        assert (first.state, first.step_index) == ("running", 0) and f":{driver.pid}:" in first.driver
        with uvicorn_server(django_db_blocker) as base:
            stop, statuses = threading.Event(), []

            def traffic():
                while not stop.is_set():
                    statuses.append(ask(base, key, model))
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                for _ in range(8):
                    pool.submit(traffic)
                try:
                    wait_for(lambda: Rollout.objects.get(model=model).stale, timeout=10, interval=0.05,
                             what="the lease to lapse")
                    with pytest.raises(CommandError, match="rollout rolled_back"):
                        call_command("deploy", "--model", model, "--resume", "--created-by", "tests-2")
                finally:
                    stop.set()
    rollout = Rollout.objects.get(model=model)
    assert rollout.state == "rolled_back", rollout.reason
    assert "error rate" in rollout.reason
    events = list(ControlEvent.objects.filter(target__startswith=f"rollout:{rollout.pk}:").order_by("id"))
    steps = [e for e in events if e.action == "rollout_step"]
    taken_over = next(e for e in events if e.action == "rollout_taken_over")
    rolled_back = next(e for e in events if e.action == "rollout_rolled_back")
    # the 10% step was published once, by the killed driver; the second went on from it (no double step)
    assert [(e.detail["percent"], e.detail["driver"]) for e in steps] == [(10, first.driver)]
    assert taken_over.detail["previous_driver"] == first.driver and taken_over.detail["step_index"] == 0
    assert taken_over.actor_name == "tests-2" and steps[0].id < taken_over.id < rolled_back.id
    # one window after the take-over (extended only while the canary had fewer than min_requests)
    windows = 1 + rolled_back.detail["figures"]["extensions"]
    assert (rolled_back.created_at - taken_over.created_at).total_seconds() < windows * window_s + 2
    # The figures it decided on: the canary's error rate above the stable's by more than the
    # document's max_error_rate_delta (a window holds a dozen requests: the 30% fail rate shows
    # as 9-40%, so a fixed bound like "> 10%" failed about one run in nine).
    figures = rolled_back.detail["figures"]
    delta = config.current().rollout["max_error_rate_delta"]
    assert figures["canary"]["error_rate"] - figures["stable"]["error_rate"] > delta
    after = config.ConfigSnapshot.of(0, None, documents.current_content())
    assert after.versions(model) == {"v1": 100, "v2": 0}  # the content from before the rollout
    # paid traffic's errors during the rollout: at most about the canary's share (10%) x 30%
    # (a 429 is the admission shedding load on a busy machine, not a failed generation)
    errors = sum(1 for s in statuses if s not in (200, 429))
    assert statuses and errors / len(statuses) <= 0.10, collections.Counter(statuses)
