"""Evaluation runs: create (a frozen record of what runs), drive (render each
row through each column, generate at batch priority, score, store), cancel,
resume.

How a cell runs: the column's prompt version renders the row's variables the
way a run by reference does (playground.runs), into a /v1/chat/completions
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
each window ends, and a driver holds the run by a lease (core.leases, shared
with Batch API batches) it renews (also while a window waits for the owner's
budget); it holds no database connection while a window waits. After a crash
the lease runs out and the next driver (`manage.py eval_worker`, or in the
embedded default a read of the run) skips the cells already stored. A failed
cell (a missing variable, an engine error, a timeout, no worker) is stored as a
failure with its code; it never fails the run.
"""

from __future__ import annotations

import datetime
import logging
import uuid

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from core.commit import after_commit
from core.errors import ApiError
from core.ids import is_uuid
from core.leases import (
    drive_in_thread,
    job_slot_check,
    lease_claim,
    lease_owner_id,
    lease_renew,
    release_connection,
    unheld,
)
from inference_protocol.catalog import UnknownModel, model_names, model_spec
from inference_protocol.features import unsupported
from inference_protocol.validation import InvalidInput, check_sampling, check_stop

from .. import selectors as prompt_selectors
from ..bodies import body_text
from ..models import PromptVersion
from ..permissions import access_prompt
from ..runs import version_params, version_render
from ..templating import template_variables
from .evaluators import Score, check_evaluators, judge_score, score_output
from .models import DatasetVersion, EvalColumn, EvalResult, EvalRun, RunStatus
from .permissions import access_dataset

logger = logging.getLogger(__name__)

CELL_NAMESPACE = uuid.UUID("6f0c3c4e-1f0b-4d7e-9a43-2f5b6f2e9e10")
COLUMN_FIELDS = {"prompt", "version", "label", "model", "params"}
PARAM_FIELDS = {"temperature", "max_tokens", "top_p", "stop"}
ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)


def cell_request_id(run_id, column_id, row_id) -> str:
    return uuid.uuid5(CELL_NAMESPACE, f"{run_id}/{column_id}/{row_id}").hex


def _column_error(i: int, message: str, code: str, field: str = "") -> ApiError:
    return ApiError(message, code=code, field=f"columns[{i}]{'.' + field if field else ''}")


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
        raise ApiError("Give at least one column (a prompt version to run).", code="columns_required",
                       field="columns")
    if len(columns) > settings.EVAL_RUN_MAX_COLUMNS:
        raise ApiError(f"At most {settings.EVAL_RUN_MAX_COLUMNS} columns per run.", code="too_many_columns",
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
    response schema needs structured output; tools are not run here): refused,
    never ignored."""
    try:
        spec = model_spec(model) if isinstance(model, str) else None
    except UnknownModel:
        spec = None
    if spec is None:
        raise ApiError(f"Unknown model {model!r}; known models: {', '.join(sorted(model_names()))}.",
                       code="unknown_model", field=field)
    if params.get("tools"):  # a cell scores text; calls would need answering: refused, not ignored
        raise ApiError("Evaluation runs do not run tools: evaluate a version without tools.",
                       code="unsupported_parameter", field=field)
    missing = unsupported(spec, {"response_format"} if params.get("response_format") else set())
    if missing:
        raise ApiError(f"The model {model!r} does not implement {missing[0]} (the version's response "
                       "schema needs it).", code="unsupported_parameter", field=field)


def _check_judges(user, specs: list[dict]) -> None:
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
            raise ApiError("A judge prompt needs a response schema with a score (number) and a reason "
                           "(string): save the judge version with one.", code="judge_without_schema",
                           field=field)
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        if not {"score", "reason"} <= set(properties):
            raise ApiError("The judge's response schema must have the properties score and reason.",
                           code="judge_schema_invalid", field=field)
        _check_model(version.model_name, version_params(version), field)


def evalrun_create(*, user, dataset_id, columns, evaluators, version_id=None, name: str = "") -> EvalRun:
    """Check everything, then store the run (queued) and hand it to a driver.
    404s: a dataset, version or prompt the user cannot see; 429 past the user's
    EVAL_MAX_ACTIVE_RUNS unfinished runs."""
    dataset = access_dataset(user=user, dataset_id=dataset_id, need="view")
    versions = DatasetVersion.objects.filter(dataset=dataset)
    if version_id is None:
        version = versions.order_by("-number").first()
        if version is None:
            raise ApiError("The dataset has no version yet: add rows first.", code="dataset_empty",
                           field="dataset")
    else:
        version = versions.filter(pk=version_id).first() if is_uuid(version_id) else None
        if version is None:
            raise ApiError("Dataset version not found.", code="version_not_found", status_code=404,
                           field="dataset_version")
    if version.row_count == 0:
        raise ApiError("The dataset version has no rows.", code="dataset_empty", field="dataset_version")
    if not isinstance(name, str) or len(name) > 200:
        raise ApiError("name is at most 200 characters.", code="invalid_name", field="name")
    specs = check_evaluators(evaluators)
    _check_judges(user, specs)
    checked = _check_columns(user, columns)
    with transaction.atomic():
        job_slot_check(user=user, active=EvalRun.objects.filter(owner=user, status__in=ACTIVE),
                       limit=settings.EVAL_MAX_ACTIVE_RUNS, setting="EVAL_MAX_ACTIVE_RUNS",
                       kind="evaluation run")
        run = EvalRun.objects.create(owner=user, dataset_version=version, name=name, evaluators=specs,
                                     total=version.row_count * len(checked))
        EvalColumn.objects.bulk_create([
            EvalColumn(run=run, index=i, prompt_version=c["version"], model_name=c["model"],
                       params=c["params"])
            for i, c in enumerate(checked)])
        evalrun_dispatch(run.pk)
    return run




# -- dispatch and resume ------------------------------------------------------

def evalrun_dispatch(run_id) -> None:
    """Start a driver once the transaction commits (EVAL_DISPATCH=thread); with
    "none" the next `manage.py eval_worker` poll takes the run."""
    if settings.EVAL_DISPATCH == "thread":
        after_commit(_start_thread, run_id)


def _start_thread(run_id) -> None:
    drive_in_thread(evalrun_drive, run_id, name=f"eval-{run_id}")


def evalrun_resume_if_stale(run: EvalRun) -> bool:
    """A read of an unfinished run whose lease ran out restarts its driver."""
    if run.status not in ACTIVE or settings.EVAL_DISPATCH != "thread":
        return False
    if run.lease_until is not None and run.lease_until > timezone.now():
        return False
    just_now = timezone.now() - datetime.timedelta(seconds=settings.EVAL_LEASE_S)
    if run.status == RunStatus.QUEUED and run.created_at > just_now:
        return False  # just created: its own driver is starting
    _start_thread(run.pk)
    return True


def stale_runs():
    return EvalRun.objects.filter(status__in=ACTIVE).filter(unheld()).order_by("created_at")


def _claim(run_id, owner: str) -> bool:
    claimed = lease_claim(EvalRun.objects.filter(pk=run_id, status__in=ACTIVE), owner=owner,
                          seconds=settings.EVAL_LEASE_S, status=RunStatus.RUNNING)
    if claimed:
        EvalRun.objects.filter(pk=run_id, started_at__isnull=True).update(started_at=timezone.now())
    return claimed


def _renew(run_id, owner: str) -> bool:
    return lease_renew(EvalRun.objects.filter(pk=run_id, status=RunStatus.RUNNING), owner=owner,
                       seconds=settings.EVAL_LEASE_S)


def _progress(run_id) -> None:
    results = EvalResult.objects.filter(run_id=run_id)
    EvalRun.objects.filter(pk=run_id).update(completed=results.count(),
                                             failed=results.exclude(error_code="").count())


def evalrun_cancel(*, run: EvalRun) -> EvalRun:
    """Ask the driver to stop (it cancels what it has in flight); a run no
    driver holds is cancelled at once. Finished runs are a 409."""
    if run.status not in ACTIVE:
        raise ApiError(f"The run is already {run.status}.", code="run_finished", status_code=409)
    EvalRun.objects.filter(pk=run.pk).update(cancel_requested=True)
    now = timezone.now()
    EvalRun.objects.filter(pk=run.pk, status__in=ACTIVE).filter(unheld(now)).update(
        status=RunStatus.CANCELLED, finished_at=now, lease_until=None)
    run.refresh_from_db()
    return run


# -- the driver ---------------------------------------------------------------

class _Column:
    def __init__(self, column: EvalColumn):
        self.column = column
        self.version = column.prompt_version
        self.body = body_text(self.version)


class _Judge:
    def __init__(self, spec: dict):
        self.key = spec["key"]
        self.threshold = float(spec["args"].get("threshold", 0.5))
        self.version = PromptVersion.objects.select_related("payload_blob").get(pk=spec["args"]["version"])
        self.body = body_text(self.version)
        self.params = version_params(self.version)
        self.uses = set(template_variables(self.version.system, self.body)) | set(self.version.variables)


def _lane(run: EvalRun):
    """The gateway's batch lane for this run's owner (settings.EVAL_LANE: the
    gateway sits above this app, so the settings name it)."""
    return import_string(settings.EVAL_LANE)(user=run.owner, eval_run=run.pk)


def _chat_body(request_id: str, *, model: str, messages: list, params: dict) -> dict:
    """The /v1/chat/completions body of one cell (the lane checks it as /v1 does)."""
    body = {"model": model, "messages": messages, **params}
    # Seeded from the cell's id where sampling draws, so a regenerated cell replays
    # its text; a greedy cell needs none, and without one identical cells share a
    # prompt-cache entry.
    if body.get("temperature", 1.0) != 0:
        body["seed"] = int(request_id[:8], 16) & 0x7FFFFFFF
    return body


def _run_lane(lane, run_id, owner: str, requests: list) -> list[dict] | None:
    if not requests:
        return []
    release_connection()  # the window waits on generations and budgets with none held
    return lane.run(requests, keep_going=lambda: _keep_going(run_id, owner),
                    timeout_s=settings.EVAL_CELL_TIMEOUT_S, no_worker_wait_s=settings.EVAL_NO_WORKER_WAIT_S)


def _keep_going(run_id, owner: str) -> bool:
    """Between waits in a window: not cancelled, and the lease renewed (then
    the connection goes back before the next wait)."""
    try:
        return not _cancelled(run_id) and _renew(run_id, owner)
    finally:
        release_connection()


def _cancelled(run_id) -> bool:
    return EvalRun.objects.filter(pk=run_id, cancel_requested=True).exists()


def evalrun_drive(run_id, *, owner: str | None = None) -> str:
    """Drive a run to its end (or to a cancel, or until another driver holds
    it). Returns the run's status, or "busy" when another driver holds it."""
    owner = owner or lease_owner_id()
    if not _claim(run_id, owner):
        return "busy"
    run = EvalRun.objects.select_related("owner").get(pk=run_id)
    lane = _lane(run)
    columns = [_Column(c) for c in run.columns.select_related("prompt_version__payload_blob")]
    judges = [_Judge(spec) for spec in run.evaluators if spec["name"] == "judge"]
    done = set(EvalResult.objects.filter(run=run).values_list("column_id", "row_id"))
    rows = list(run.dataset_version.rows.order_by("index").values("id", "index", "variables", "expected"))
    pending = [(row, col) for row in rows for col in columns if (col.column.pk, row["id"]) not in done]
    window = max(1, settings.EVAL_RUN_WINDOW)
    for start in range(0, len(pending), window):
        if _cancelled(run_id):
            return _finish(run_id, owner, RunStatus.CANCELLED)
        cells = _execute(run, pending[start:start + window], lane, owner, judges)
        if cells is None:  # cancelled mid-window (what was in flight is dropped), or the lease lost
            return _finish(run_id, owner, RunStatus.CANCELLED) if _cancelled(run_id) else "busy"
        EvalResult.objects.bulk_create(cells, ignore_conflicts=True)
        _progress(run_id)
        if not _renew(run_id, owner):
            logger.warning("eval run %s: lease lost; another driver continues", run_id)
            return "busy"
    return _finish(run_id, owner, RunStatus.DONE)


def _finish(run_id, owner: str, status: str) -> str:
    _progress(run_id)
    run = EvalRun.objects.get(pk=run_id)
    summary = run_summary(run)
    EvalRun.objects.filter(pk=run_id, lease_owner=owner).update(
        status=status, summary=summary, finished_at=timezone.now(), lease_until=None)
    return status


def _failure(run, row, col, code: str, message: str) -> EvalResult:
    return EvalResult(run=run, column=col.column, row_id=row["id"], row_index=row["index"], error_code=code,
                      error_message=message[:2000], passed=None)


def _execute(run: EvalRun, cells: list, lane, owner: str,
             judges: list | None = None) -> list[EvalResult] | None:
    out: list[EvalResult] = []
    submitted: list[tuple[dict, _Column]] = []
    requests = []
    for row, col in cells:
        column = col.column
        try:
            _, messages = version_render(version=col.version, variables=row["variables"], body=col.body)
        except ApiError as exc:  # a missing or unknown variable: this row fails, the rest runs
            out.append(_failure(run, row, col, exc.get_codes(), str(exc.detail)))
            continue
        request_id = cell_request_id(run.pk, column.pk, row["id"])
        requests.append({"request_id": request_id, "prompt_version": str(col.version.pk),
                         "body": _chat_body(request_id, model=column.model_name, messages=messages,
                                            params=column.params)})
        submitted.append((row, col))
    events = _run_lane(lane, run.pk, owner, requests)
    if events is None:
        return None
    done = []
    for (row, col), event in zip(submitted, events, strict=True):
        if event["type"] == "done":
            done.append((row, col, event))
        else:
            out.append(_failure(run, row, col, event.get("code") or "generation_failed",
                                event.get("message") or "the generation failed"))
    judged = _judge_all(run, done, lane, owner, judges or [])
    if judged is None:
        return None
    for (row, col, event), extra in zip(done, judged, strict=True):
        out.append(_scored(run, row, col, event, extra))
    return out


def _judge_all(run: EvalRun, done: list, lane, owner: str, judges: list) -> list[dict] | None:
    """Each judge's score of each done cell ({key: score dict} per cell)."""
    scores: list[dict] = [{} for _ in done]
    for judge in judges:
        pending, requests = [], []
        for index, (row, col, event) in enumerate(done):
            output = event["result"].get("text", "")
            values = {**row["variables"], "output": output, "expected": row["expected"] or ""}
            try:
                _, messages = version_render(version=judge.version, body=judge.body,
                                             variables={k: v for k, v in values.items() if k in judge.uses})
            except ApiError as exc:
                score = Score(0.0, False, f"the judge could not render: {exc.detail}")
                scores[index][judge.key] = score.as_dict()
                continue
            request_id = uuid.uuid5(CELL_NAMESPACE, f"{cell_request_id(run.pk, col.column.pk, row['id'])}"
                                                    f"/judge/{judge.key}").hex
            requests.append({"request_id": request_id, "prompt_version": str(judge.version.pk),
                             "body": _chat_body(request_id, model=judge.version.model_name, messages=messages,
                                                params=judge.params)})
            pending.append(index)
        events = _run_lane(lane, run.pk, owner, requests)
        if events is None:
            return None
        for index, event in zip(pending, events, strict=True):
            if event["type"] == "done":
                score = judge_score(event["result"].get("text", ""), schema=judge.version.response_schema,
                                    threshold=judge.threshold)
            else:
                reason = f"the judge failed: {event.get('code')}: {event.get('message', '')}"
                score = Score(0.0, False, reason)
            scores[index][judge.key] = score.as_dict()
    return scores


def _scored(run: EvalRun, row: dict, col: _Column, event: dict, judged: dict) -> EvalResult:
    result = event["result"]
    output = result.get("text", "")
    scores = score_output(run.evaluators, output=output, expected=row["expected"], variables=row["variables"])
    scores = {spec["key"]: (judged.get(spec["key"]) or scores.get(spec["key"])) for spec in run.evaluators}
    latency = result.get("latency_s")
    return EvalResult(run=run, column=col.column, row_id=row["id"], row_index=row["index"], output=output,
                      scores=scores, passed=all(s["passed"] for s in scores.values()),
                      latency_ms=int(latency * 1000) if isinstance(latency, int | float) else None,
                      prompt_tokens=result.get("prompt_tokens") or 0,
                      completion_tokens=result.get("completion_tokens") or 0,
                      served=str(result.get("served") or "")[:200], cache_hit=event.get("cache_hit") or "")


# -- aggregates ---------------------------------------------------------------

def bootstrap_ci(values, *, resamples: int | None = None, seed: int = 0) -> tuple[float, float]:
    """95% percentile-bootstrap interval of the mean (deterministic: seeded)."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return (0.0, 0.0)
    if data.size == 1 or np.all(data == data[0]):
        return (float(data[0]), float(data[0]))
    resamples = resamples or settings.EVAL_BOOTSTRAP_RESAMPLES
    resamples = max(100, min(resamples, 20_000_000 // data.size))  # bound the work on huge runs
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return (float(low), float(high))


def run_summary(run: EvalRun) -> dict:
    """Per column: cells, failures, per evaluator mean (a failed cell scores 0),
    its 95% bootstrap interval, pass rate and score histogram; latency p50/p95; tokens;
    how many cells each model@version served."""
    keys = [spec["key"] for spec in run.evaluators]
    out = {"columns": []}
    for column in run.columns.order_by("index"):
        cells = list(EvalResult.objects.filter(column=column).values_list(
            "scores", "error_code", "latency_ms", "prompt_tokens", "completion_tokens", "passed", "served"))
        latencies = [c[2] for c in cells if c[2] is not None]
        served: dict[str, int] = {}
        for c in cells:
            if c[6]:
                served[c[6]] = served.get(c[6], 0) + 1
        entry = {"column": column.index, "cells": len(cells), "failed": sum(1 for c in cells if c[1]),
                 "passed": sum(1 for c in cells if c[5]),
                 "prompt_tokens": sum(c[3] for c in cells), "completion_tokens": sum(c[4] for c in cells),
                 "latency_ms_p50": float(np.percentile(latencies, 50)) if latencies else None,
                 "latency_ms_p95": float(np.percentile(latencies, 95)) if latencies else None,
                 "served": dict(sorted(served.items())),  # model@version -> cells it served
                 "scores": {}}
        for key in keys:
            values = [(c[0].get(key) or {}).get("score", 0.0) if not c[1] else 0.0 for c in cells]
            passes = [bool((c[0].get(key) or {}).get("passed")) for c in cells]
            low, high = bootstrap_ci(values)
            # The distribution for the page's chart: ten bins of 0.1 (a score of 1 in the last).
            tenths = (np.asarray(values, dtype=float) * 10).astype(int)
            bins = np.bincount(np.minimum(tenths, 9), minlength=10)
            entry["scores"][key] = {"mean": float(np.mean(values)) if values else 0.0, "ci95": [low, high],
                                    "pass_rate": (sum(passes) / len(passes)) if passes else 0.0,
                                    "histogram": [int(b) for b in bins]}
        out["columns"].append(entry)
    return out
