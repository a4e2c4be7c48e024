"""A run through the real path to GPU workers: Celery over RabbitMQ, events and
heartbeats in Redis. A worker killed mid-run has its cells redelivered to
another; each cell ends with one result, the run is done."""

import os
import signal
import threading
import uuid

import pytest

from evals.datasets import dataset_create, dataset_version_create
from evals.models import EvalResult
from evals.run_job import evalrun_drive
from evals.runs import evalrun_create
from inference_protocol.backend import live_workers
from tests.evals.conftest import rows, use_backend
from tests.factories import PromptFactory, PromptVersionFactory
from tests.inference_worker.workers import celery_worker, delete_queues
from tests.polling import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.needs_services]


def test_should_finish_a_run_when_its_worker_dies_mid_batch(user, settings):
    use_backend(settings, "inference_client.backend.CeleryBackend")
    model = f"eval-celery-{uuid.uuid4().hex[:6]}"
    # Slow calls, so the first worker surely holds cells when it dies.
    spec = {model: {"engine": "fixed_cost", "max_inputs": 8, "call_s": 1.5}}
    settings.INFERENCE_MODELS = {**settings.INFERENCE_MODELS, **spec}
    dataset = dataset_create(owner=user, name="celery")
    dataset_version_create(
        dataset=dataset, author=user, add=rows(*[(f"row {i}", f"row {i}"[::-1]) for i in range(6)])
    )
    version = PromptVersionFactory(prompt=PromptFactory(owner=user), body="{{q}}", model_name=model)
    run = evalrun_create(
        user=user,
        dataset_id=dataset.pk,
        evaluators=["exact"],
        columns=[{"prompt": str(version.prompt_id), "version": str(version.pk)}],
    )
    killed = threading.Event()
    try:
        with celery_worker(spec, [f"gpu.{model}"], name="doomed") as doomed:
            wait_for(lambda: live_workers(model), timeout=60, what="the first worker")

            def crash():  # no database here: only heartbeats and processes
                wait_for(
                    lambda: any(h["running"] for h in live_workers(model)),
                    timeout=60,
                    what="the first worker to start a batch",
                )
                with celery_worker(spec, [f"gpu.{model}"], name="rescuer"):
                    wait_for(lambda: len(live_workers(model)) >= 2, timeout=60, what="the rescuer")
                    os.kill(doomed.pid, signal.SIGKILL)
                    killed.set()
                    finished.wait(120)

            finished = threading.Event()
            helper = threading.Thread(target=crash, daemon=True)
            helper.start()
            try:
                assert evalrun_drive(run.pk) == "done"
            finally:
                finished.set()
                helper.join(30)
    finally:
        delete_queues([f"gpu.{model}"])
    assert killed.is_set()
    results = EvalResult.objects.filter(run=run).order_by("row_index")
    assert [(r.output, r.passed) for r in results] == [(f"row {i}"[::-1], True) for i in range(6)]
    run.refresh_from_db()
    assert (run.status, run.completed, run.failed) == ("done", 6, 0)

