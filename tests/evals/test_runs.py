"""Runs: every row through every column at batch priority, scored; a failed
row never fails the run; resumable (cells stored once); cancellable."""

import datetime

import pytest
from django.utils import timezone

from core.error_codes import DomainError
from evals.datasets import dataset_create, dataset_version_create
from evals.models import EvalResult, EvalRun, RunStatus
from evals.run_job import cell_request_id, evalrun_drive
from evals.runs import evalrun_cancel, evalrun_create
from evals.summary import bootstrap_ci
from inference_client.models import UsageRecord
from inference_worker.inprocess import InProcessBackend
from tests.evals.conftest import MODEL, rows, use_backend
from tests.factories import PromptVersionFactory, UserFactory


@pytest.fixture
def dataset(user):
    dataset = dataset_create(owner=user, name="reverse")
    dataset_version_create(dataset=dataset, author=user, add=[
        *rows(("abc", "cba"), ("hello", "olleh"), ("xyz", "nope")),
        {"variables": {}, "expected": "x"},                      # q missing: this row fails alone
        {"variables": {"q": "a", "stray": "1"}, "expected": "a"},  # an unknown variable: fails alone
    ])
    return dataset


def _run(user, dataset, versions, evaluators=("exact",), **column):
    return evalrun_create(user=user, dataset_id=dataset.pk, evaluators=list(evaluators), columns=[
        {"prompt": str(v.prompt_id), "version": str(v.pk), **column} for v in versions])


def test_should_run_every_row_through_every_column_and_score_it(user, dataset, echo_version, backend):
    shouting = PromptVersionFactory(prompt=echo_version.prompt, parent=echo_version, body="{{q}}!",
                                    model_name=MODEL)
    run = _run(user, dataset, [echo_version, shouting], evaluators=["exact", {"name": "contains",
                                                                            "args": {"value": "l"}}])
    assert (run.status, run.total) == (RunStatus.QUEUED, 10)
    assert evalrun_drive(run.pk) == RunStatus.DONE
    run.refresh_from_db()
    assert (run.status, run.completed, run.failed) == ("done", 10, 4)
    results = EvalResult.objects.filter(run=run).select_related("column")
    cells = {(r.row_index, r.column.index): r for r in results}
    assert cells[(0, 0)].output == "cba" and cells[(0, 0)].scores["exact"]["passed"] is True
    assert cells[(0, 1)].output == "!cba" and cells[(0, 1)].passed is False
    assert cells[(1, 0)].passed is True  # exact and contains "l"
    assert cells[(3, 0)].error_code == "missing_variables" and cells[(3, 0)].passed is None
    assert cells[(4, 1)].error_code == "unknown_variables"
    assert cells[(0, 0)].completion_tokens == 3 and cells[(0, 0)].latency_ms is not None
    assert cells[(0, 0)].served == MODEL and cells[(3, 0)].served == ""  # a failed cell reached no worker
    # Each generated cell's usage, tagged with the run (the gateway's batch lane; embedded too).
    assert UsageRecord.objects.filter(eval_run=run.pk, status="ok").count() == 6
    first, second = run.summary["columns"]
    assert first["scores"]["exact"]["mean"] == pytest.approx(0.4)  # 2 of 5; the failed row scores 0
    assert second["scores"]["exact"]["mean"] == 0.0
    low, high = first["scores"]["exact"]["ci95"]
    assert 0.0 <= low <= 0.5 <= high <= 1.0
    assert first["failed"] == 2 and first["completion_tokens"] == 11
    assert first["scores"]["exact"]["histogram"] == [3, 0, 0, 0, 0, 0, 0, 0, 0, 2]


class Recording(InProcessBackend):
    """The real in-process worker, remembering what it was given."""

    submitted: list = []

    def submit(self, request):
        self.submitted.append(request)
        super().submit(request)


def test_should_submit_each_cell_at_batch_priority_under_a_stable_request_id(user, dataset, echo_version,
                                                                            settings):
    backend = use_backend(settings, "tests.evals.test_runs.Recording")
    backend.submitted.clear()
    run = _run(user, dataset, [echo_version])
    evalrun_drive(run.pk)
    column = run.columns.get()
    ids = {cell_request_id(run.pk, column.pk, r.pk) for r in run.dataset_version.rows.all()[:3]}
    assert {r.priority for r in backend.submitted} == {"batch"}
    assert {r.request_id for r in backend.submitted} == ids  # three renderable rows, one request each
    assert len({r.seed for r in backend.submitted}) == 3


def test_should_resume_a_crashed_run_without_running_stored_cells_again(user, dataset, echo_version, backend):
    run = _run(user, dataset, [echo_version])
    column = run.columns.get()
    first_row = run.dataset_version.rows.get(index=0)
    # A driver that died after storing one cell: its lease has run out.
    EvalResult.objects.create(run=run, column=column, row=first_row, row_index=0, output="from before",
                              scores={}, passed=True)
    EvalRun.objects.filter(pk=run.pk).update(status="running", lease_owner="dead-host:1:1",
                                             lease_until=timezone.now() - datetime.timedelta(seconds=1))
    assert evalrun_drive(run.pk) == "done"
    results = EvalResult.objects.filter(run=run)
    assert results.count() == 5
    assert results.get(row_index=0).output == "from before"  # not generated twice
    assert results.get(row_index=1).output == "olleh"


def test_should_cancel_a_run_no_driver_holds_and_refuse_a_finished_one(user, dataset, echo_version, backend):
    run = evalrun_cancel(run=_run(user, dataset, [echo_version]))
    assert run.status == "cancelled" and run.finished_at is not None
    assert evalrun_drive(run.pk) == "busy"  # a cancelled run is never driven
    with pytest.raises(DomainError) as exc:
        evalrun_cancel(run=run)
    assert (exc.value.code, exc.value.status) == ("run_finished", 409)


def test_should_stop_a_held_run_at_its_next_window_when_cancelled(user, dataset, echo_version, backend):
    run = _run(user, dataset, [echo_version])
    EvalRun.objects.filter(pk=run.pk).update(cancel_requested=True)
    assert evalrun_drive(run.pk) == "cancelled"
    assert EvalResult.objects.filter(run=run).count() == 0


def test_should_refuse_bad_run_requests(user, dataset, echo_version):
    stranger = UserFactory()
    cases = [
        (dict(user=stranger), "dataset_not_found", 404),      # someone else's dataset, no access
        (dict(columns=[]), "columns_required", 400),
        (dict(columns=[{"prompt": str(echo_version.prompt_id)}]), "version_required", 400),
        (dict(columns=[{"prompt": str(echo_version.prompt_id), "version": str(echo_version.pk),
                        "model": "nope"}]), "model_not_found", 404),
        (dict(columns=[{"prompt": str(echo_version.prompt_id), "version": str(echo_version.pk),
                        "params": {"seed": 1}}]), "unknown_parameter", 400),
        (dict(columns=[{"prompt": str(echo_version.prompt_id), "version": str(echo_version.pk),
                        "params": {"temperature": 9}}]), "out_of_range", 400),
        (dict(evaluators=["nope"]), "unknown_evaluator", 400),
        (dict(version_id="00000000-0000-0000-0000-000000000000"), "version_not_found", 404),
    ]
    base = dict(user=user, dataset_id=dataset.pk, evaluators=["exact"],
                columns=[{"prompt": str(echo_version.prompt_id), "version": str(echo_version.pk)}])
    for override, code, status in cases:
        with pytest.raises(DomainError) as exc:
            evalrun_create(**{**base, **override})
        assert (exc.value.code, exc.value.status) == (code, status), override
    other = PromptVersionFactory(model_name=MODEL)  # a prompt the user cannot see
    with pytest.raises(DomainError) as exc:
        evalrun_create(**{**base, "columns": [{"prompt": str(other.prompt_id), "version": str(other.pk)}]})
    assert exc.value.code == "prompt_not_found"
    assert not EvalRun.objects.exists()


def test_bootstrap_interval_narrows_with_more_data():
    small = bootstrap_ci([1, 0] * 10)
    big = bootstrap_ci([1, 0] * 1000)
    assert small[0] < big[0] <= 0.5 <= big[1] < small[1]
    assert bootstrap_ci([1, 1, 1]) == (1.0, 1.0)


def test_eval_worker_should_drive_a_queued_run(user, dataset, echo_version, backend):
    from django.core.management import call_command

    run = _run(user, dataset, [echo_version])
    call_command("eval_worker", "--once")
    run.refresh_from_db()
    assert (run.status, run.completed) == ("done", 5)


def test_should_delete_an_account_with_its_datasets_prompts_and_runs(user, dataset, echo_version, backend):
    run = _run(user, dataset, [echo_version])
    evalrun_drive(run.pk)
    user.delete()  # what the runs used goes with them (RESTRICT, not PROTECT)
    assert not EvalRun.objects.filter(pk=run.pk).exists() and not EvalResult.objects.exists()


def test_should_keep_what_another_users_run_used(user, dataset, echo_version, backend):
    from django.db.models import RestrictedError

    from sharing.models import Grant

    grantee = UserFactory()
    Grant.objects.create(dataset=dataset, user=grantee, role="viewer")
    own = PromptVersionFactory(prompt__owner=grantee, body="{{q}}", model_name=MODEL)
    run = _run(grantee, dataset, [own])
    with pytest.raises(RestrictedError):
        user.delete()  # the grantee's run still needs the dataset's rows
    assert EvalRun.objects.filter(pk=run.pk).exists()

