"""Evaluation runs: create (a frozen record of what runs), cancel, resume. The
driving (render each row through each column, generate at batch priority,
score, store) is a background job: evals.run_job.

How a cell runs: the column's prompt version renders the row's variables the
way a run by reference does (playground.calls.builder), into a /v1/chat/completions
body, and the gateway's batch lane (settings.EVAL_LANE:
inference_client.batch_lane) runs it through the same path as /v1: the /v1
checker, the prompt cache (identical greedy cells hit it), admission at batch
priority against the run owner's tier (its buckets less the share kept for its
interactive calls; the scheduler gives batch work only the slots interactive
traffic leaves empty), and a usage record tagged with the run. Each cell has a
request id derived from (run, column, row) and, where sampling draws, a seed
derived from it: a resubmitted cell (a resumed run, a redelivered task) gets
the worker's stored result for that id instead of a second generation, and a
regenerated one replays the same text. At most EVAL_RUN_WINDOW cells of a run
are in flight.

Who drives: with services, `manage.py eval_worker` processes (EVAL_DISPATCH
none), never a server; in the embedded default a thread of the server.
Resumable: results are written once per cell (unique per column and row) as
each window ends, and a driver holds the run by a lease (core.jobs, the driver
of every background job) it renews (also while a window waits for the owner's
budget); it holds no database connection while a window waits. After a crash
the lease runs out and the next driver (`manage.py eval_worker`, or in the
embedded default a read of the run) skips the cells already stored. A failed
cell (a missing variable, an engine error, a timeout, no worker) is stored as a
failure with its code; it never fails the run.
"""

from __future__ import annotations

import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.error_codes import DomainError
from core.ids import is_uuid
from core.jobs import dispatch, drive_in_thread, request_cancel
from inference_protocol.catalog import UnknownModel, model_names, model_spec
from inference_protocol.features import unsupported
from inference_protocol.validation import InvalidInput, check_sampling, check_stop
from playground import selectors as prompt_selectors
from playground.bodies import body_text
from playground.calls.builder import version_params, version_render
from playground.permissions import access_prompt

from .evaluators import check_evaluators
from .models import DatasetVersion, EvalColumn, EvalRun, RunStatus
from .permissions import access_dataset
from .run_job import RUN_JOB

COLUMN_FIELDS = {"prompt", "version", "label", "model", "params"}
PARAM_FIELDS = {"temperature", "max_tokens", "top_p", "stop"}


def _column_error(i: int, message: str, code: str, field: str = "") -> DomainError:
    return DomainError(message, code=code, field=f"columns[{i}]{'.' + field if field else ''}")


def _check_column_params(i: int, params) -> dict:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise _column_error(i, "params must be an object.", "invalid_type", "params")
    unknown = set(params) - PARAM_FIELDS
    if unknown:
        name = sorted(unknown)[0]
        raise _column_error(i, f"A column may set {', '.join(sorted(PARAM_FIELDS))}; not {name!r}.",
                            "unknown_parameter", f"params.{name}")
    try:
        check_sampling(**{k: params[k] for k in ("temperature", "top_p", "max_tokens") if k in params})
        if "stop" in params:
            check_stop(params["stop"])
    except InvalidInput as exc:
        raise _column_error(i, str(exc), "out_of_range" if exc.kind not in ("invalid_type",) else exc.kind,
                            f"params.{exc.field}") from None
    return dict(params)


def _check_columns(user, columns) -> list[dict]:
    if not isinstance(columns, list) or not columns:
        raise DomainError("Give at least one column (a prompt version to run).", code="columns_required",
                          field="columns")
    if len(columns) > settings.EVAL_RUN_MAX_COLUMNS:
        raise DomainError(f"At most {settings.EVAL_RUN_MAX_COLUMNS} columns per run.",
                          code="too_many_columns",
                          field="columns")
    out = []
    for i, spec in enumerate(columns):
        if not isinstance(spec, dict):
            raise _column_error(i, "A column is an object {prompt, version or label, model, params}.",
                                "invalid_type")
        unknown = set(spec) - COLUMN_FIELDS
        if unknown:
            raise _column_error(i, f"Unrecognized column field: {sorted(unknown)[0]}.", "unknown_parameter",
                                sorted(unknown)[0])
        if ("version" in spec) == ("label" in spec):
            raise _column_error(i, "Name exactly one of version or label.", "version_required", "version")
        if "label" in spec:
            prompt = access_prompt(user=user, prompt_id=spec.get("prompt"), need="view")
            version = prompt_selectors.label_get(prompt=prompt, name=spec["label"]).version
        else:
            prompt = access_prompt(user=user, prompt_id=spec.get("prompt"), need="view",
                                   version_id=spec["version"])
            version = prompt_selectors.version_get(prompt=prompt, version_id=spec["version"])
        model = spec.get("model") or version.model_name
        params = {**version_params(version), **_check_column_params(i, spec.get("params"))}
        _check_model(model, params, f"columns[{i}].model")
        out.append({"version": version, "model": model, "params": params})
    return out


def _check_model(model, params: dict, field: str) -> None:
    """The model exists and its engine implements what the version asks (a
    response schema needs structured output, tools need tool calls): refused,
    never ignored."""
    try:
        spec = model_spec(model) if isinstance(model, str) else None
    except UnknownModel:
        spec = None
    if spec is None:
        raise DomainError(f"Unknown model {model!r}; known models: {', '.join(sorted(model_names()))}.",
                          code="model_not_found", field=field)
    wanted = {name for name in ("response_format", "tools") if params.get(name)}
    missing = unsupported(spec, wanted)
    if missing:
        uses = "a response schema" if missing[0] == "response_format" else "tools"
        raise DomainError(f"The model {model!r} does not implement {missing[0]}, and the version uses "
                          f"{uses}: run it on a model that does.", code="unsupported_parameter", field=field)


def check_judges(user, specs: list[dict]) -> None:
    """Each judge names a prompt version the user may view, with a response
    schema that has score and reason, on a model that constrains to it."""
    for spec in specs:
        if spec["name"] != "judge":
            continue
        field = f"evaluators.{spec['key']}"
        prompt = access_prompt(user=user, prompt_id=spec["args"]["prompt"], need="view",
                               version_id=spec["args"]["version"])
        version = prompt_selectors.version_get(prompt=prompt, version_id=spec["args"]["version"])
        schema = version.response_schema
        if schema is None:
            raise DomainError("A judge prompt needs a response schema with a score (number) and a reason "
                              "(string): save the judge version with one.", code="judge_without_schema",
                              field=field)
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        if not {"score", "reason"} <= set(properties):
            raise DomainError("The judge's response schema must have the properties score and reason.",
                              code="judge_schema_invalid", field=field)
        _check_model(version.model_name, version_params(version), field)


def _dataset_version(user, dataset_id, version_id) -> DatasetVersion:
    """The version a run goes over (the newest by default), with rows."""
    dataset = access_dataset(user=user, dataset_id=dataset_id, need="view")
    versions = DatasetVersion.objects.filter(dataset=dataset)
    if version_id is None:
        version = versions.order_by("-number").first()
        if version is None:
            raise DomainError("The dataset has no version yet: add rows first.", code="dataset_empty",
                              field="dataset")
    else:
        version = versions.filter(pk=version_id).first() if is_uuid(version_id) else None
        if version is None:
            raise DomainError("Dataset version not found.", code="version_not_found",
                              field="dataset_version")
    if version.row_count == 0:
        raise DomainError("The dataset version has no rows.", code="dataset_empty", field="dataset_version")
    return version


# Rows whose rendered size stands for the whole version in an estimate.
PLAN_SAMPLE_ROWS = 50


def _check_repeats(repeats) -> int:
    limit = settings.EVAL_RUN_MAX_REPEATS
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= limit:
        raise DomainError(f"repeats is a whole number from 1 to {limit} (EVAL_RUN_MAX_REPEATS).",
                          code="out_of_range", field="repeats")
    return repeats


def evalrun_plan(*, user, dataset_id, columns, version_id=None, repeats: int = 1) -> list[dict]:
    """What a run would send, for an estimate, checked as evalrun_create checks
    it: per column its model, the longest of the first PLAN_SAMPLE_ROWS rows'
    messages, its max_tokens and the number of generations (rows x repeats)."""
    repeats = _check_repeats(repeats)
    version = _dataset_version(user, dataset_id, version_id)
    sample = list(version.rows.order_by("index").values_list("variables", flat=True)[:PLAN_SAMPLE_ROWS])
    plan = []
    for column in _check_columns(user, columns):
        body = body_text(column["version"])
        rendered = []
        for variables in sample:
            try:
                rendered.append(version_render(version=column["version"], variables=variables, body=body)[1])
            except DomainError:
                continue  # a row that would fail costs nothing
        longest = max(rendered, key=lambda m: sum(len(x["content"]) for x in m), default=None)
        if longest is not None:
            plan.append({"model": column["model"], "messages": longest, "count": version.row_count * repeats,
                         "max_tokens": column["params"].get("max_tokens")})
    return plan


def evalrun_create(*, user, dataset_id, columns, evaluators, version_id=None, name: str = "",
                   repeats: int = 1) -> EvalRun:
    """Check everything, then store the run (queued) and hand it to a driver.
    `repeats`: how many times each row runs through each column. 404s: a
    dataset, version or prompt the user cannot see; 429 past the user's
    EVAL_MAX_ACTIVE_RUNS unfinished runs."""
    repeats = _check_repeats(repeats)
    version = _dataset_version(user, dataset_id, version_id)
    if not isinstance(name, str) or len(name) > 200:
        raise DomainError("name is at most 200 characters.", code="invalid_name", field="name")
    specs = check_evaluators(evaluators)
    check_judges(user, specs)
    checked = _check_columns(user, columns)
    with transaction.atomic():
        RUN_JOB.slot_check(user)
        run = EvalRun.objects.create(owner=user, dataset_version=version, name=name, evaluators=specs,
                                     repeats=repeats, total=version.row_count * len(checked) * repeats)
        EvalColumn.objects.bulk_create([
            EvalColumn(run=run, index=i, prompt_version=c["version"], model_name=c["model"],
                       params=c["params"])
            for i, c in enumerate(checked)])
        dispatch(RUN_JOB, run.pk)
    return run




# -- dispatch, resume, cancel --------------------------------------------------

def evalrun_resume_if_stale(run: EvalRun) -> bool:
    """A read of an unfinished run whose lease ran out restarts its driver
    (EVAL_DISPATCH=thread; else the next `manage.py eval_worker` poll does)."""
    if run.status not in RUN_JOB.active or settings.EVAL_DISPATCH != "thread":
        return False
    if run.lease_until is not None and run.lease_until > timezone.now():
        return False
    just_now = timezone.now() - datetime.timedelta(seconds=settings.EVAL_LEASE_S)
    if run.status == RunStatus.QUEUED and run.created_at > just_now:
        return False  # just created: its own driver is starting
    drive_in_thread(RUN_JOB, run.pk)
    return True


def evalrun_cancel(*, run: EvalRun) -> EvalRun:
    """Ask the driver to stop (it cancels what it has in flight); a run no
    driver holds is cancelled at once. Finished runs are a 409."""
    if run.status not in RUN_JOB.active:
        raise DomainError(f"The run is already {run.status}.", code="run_finished")
    if request_cancel(RUN_JOB, run.pk):
        now = timezone.now()
        RUN_JOB.active_rows().filter(pk=run.pk).filter(RUN_JOB.unheld(now)).update(
            status=RunStatus.CANCELLED, finished_at=now, lease_until=None)
    run.refresh_from_db()
    return run


def evalrun_delete(*, run: EvalRun) -> None:
    """Delete a finished run with its columns and results (a gate decision that
    cites it keeps its figures, without the link). A queued or running run is a
    409 run_active: cancel it first."""
    with transaction.atomic():
        locked = EvalRun.objects.select_for_update().filter(pk=run.pk).first()
        if locked is None:
            return
        if locked.status in RUN_JOB.active:
            raise DomainError(f"The run is {locked.status}: cancel it, then delete it.", code="run_active")
        locked.delete()
