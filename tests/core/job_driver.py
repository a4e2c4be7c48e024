"""A job worker process for tests/core/test_job_shutdown.py: core.jobs.run_worker
(what eval_worker and batch_worker run) over a counting kind whose steps take a
while; each step it does is printed as "did N"."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.utils import timezone  # noqa: E402

from core.jobs import Job, JobKind, run_worker  # noqa: E402
from evals.models import EvalRun, RunStatus  # noqa: E402

STEP_S = 0.3


def start(job: Job) -> dict:
    job.write(status=RunStatus.RUNNING)
    run = EvalRun.objects.get(pk=job.pk)
    return {"next": run.completed + 1, "total": run.total}


def step(job: Job, work: dict) -> str | None:
    if work["next"] > work["total"]:
        return RunStatus.DONE
    job.wait(STEP_S)
    job.write(completed=work["next"])
    print(f"did {work['next']}", flush=True)
    work["next"] += 1
    return None


def finish(job: Job, work: dict, outcome: str) -> str:
    job.end(status=outcome, finished_at=timezone.now())
    return outcome


COUNTING = JobKind(name="count", model=EvalRun, active=(RunStatus.QUEUED, RunStatus.RUNNING),
                   lease_setting="EVAL_LEASE_S", start=start, step=step, finish=finish)

if __name__ == "__main__":
    run_worker([COUNTING], once=False, poll=0.1, drivers=2, say=lambda line: print(line, flush=True))
