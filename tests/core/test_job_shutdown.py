"""A job worker sent SIGTERM lets its lease go: it stops after the step it is in,
exits, and another driver takes the job at once (not when the lease runs out),
doing no step twice. A real process (core.jobs.run_worker, as eval_worker and
batch_worker run it) on PostgreSQL."""

import os
import re
import signal
import subprocess
import sys

import pytest

from core.jobs import drive, waiting
from evals.models import Dataset, DatasetVersion, EvalRun, RunStatus
from tests.chat import live
from tests.core.job_driver import COUNTING
from tests.livesubprocess import ROOT
from tests.polling import wait_for

pytestmark = [pytest.mark.needs_services, pytest.mark.django_db(transaction=True)]


def test_a_job_worker_sent_sigterm_lets_its_lease_go_and_another_driver_goes_on(user, tmp_path, settings):
    settings.EVAL_LEASE_S = 600  # far beyond the test: only a let-go lease is free now
    dataset = Dataset.objects.create(owner=user, name="d")
    run = EvalRun.objects.create(owner=user, total=20,
                                 dataset_version=DatasetVersion.objects.create(dataset=dataset, number=1))
    log = tmp_path / "driver.log"
    env = {**os.environ, "DATABASE_URL": live.test_database_url(), "EVAL_LEASE_S": "600",
           "SHUTDOWN_GRACE_S": "10"}
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "tests/core/job_driver.py"], cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: EvalRun.objects.get(pk=run.pk).completed >= 2, timeout=60,
                     what="the driver to do two steps")
            assert waiting(COUNTING, limit=5) == []  # held
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0, log.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
    first = [int(n) for n in re.findall(r"^did (\d+)$", log.read_text(), re.M)]
    run.refresh_from_db()
    assert run.lease_until is None and run.status == RunStatus.RUNNING and run.completed == first[-1] < 20
    assert waiting(COUNTING, limit=5) == [run.pk]  # free now, 600 s before its lease would run out
    # Another driver takes it at once and resumes where the first one stopped.
    assert drive(COUNTING, run.pk, owner="next") == RunStatus.DONE
    assert first == list(range(1, first[-1] + 1))
    run.refresh_from_db()
    assert (run.status, run.completed, run.lease_until) == (RunStatus.DONE, 20, None)
