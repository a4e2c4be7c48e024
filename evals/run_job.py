"""An evaluation run as a background job (core.jobs): its declaration and its
step, one window of cells.

A window (at most EVAL_RUN_WINDOW cells) renders each cell's row through its
column's prompt version, runs the bodies through the gateway's batch lane
(settings.EVAL_LANE), judges the finished cells, and stores the results (one
per column and row). ``start`` skips the cells stored already, so a run
resumed after its driver died runs none twice. The window waits with no
database connection held, renewing the lease and checking for a cancel
between waits (``Job.keep_going``); a cancel mid-window drops what is in
flight.
"""

from __future__ import annotations

import dataclasses
import json
import uuid

from django.conf import settings
from django.utils import timezone
from django.utils.module_loading import import_string

from core.error_codes import DomainError
from core.jobs import BUSY, CANCELLED, Job, JobKind, Slots, drive
from core.leases import release_connection
from inference_protocol.tools import parse_calls
from playground.bodies import body_text
from playground.calls.builder import template_texts, version_params, version_render
from playground.models import PromptVersion
from playground.templating import template_variables

from .evaluators import Score, judge_score, score_output
from .models import EvalColumn, EvalResult, EvalRun, RunStatus
from .summary import run_summary

CELL_NAMESPACE = uuid.UUID("6f0c3c4e-1f0b-4d7e-9a43-2f5b6f2e9e10")


def cell_request_id(run_id, column_id, row_id, repeat: int = 0) -> str:
    return uuid.uuid5(CELL_NAMESPACE, f"{run_id}/{column_id}/{row_id}" + (f"/{repeat}" if repeat else "")).hex


class _Column:
    def __init__(self, column: EvalColumn):
        self.column = column
        self.version = column.prompt_version
        self.body = body_text(self.version)


class JudgePrompt:
    def __init__(self, spec: dict):
        self.key = spec["key"]
        self.threshold = float(spec["args"].get("threshold", 0.5))
        self.version = PromptVersion.objects.select_related("payload_blob").get(pk=spec["args"]["version"])
        self.body = body_text(self.version)
        self.params = version_params(self.version)
        texts = template_texts(system=self.version.system, messages=self.version.messages, body=self.body)
        self.uses = set(template_variables(*texts.values())) | set(self.version.variables)


def _lane(run: EvalRun):
    """The gateway's batch lane for this run's owner (settings.EVAL_LANE: the
    gateway sits above this app, so the settings name it)."""
    return import_string(settings.EVAL_LANE)(user=run.owner, eval_run=run.pk)


def chat_body(request_id: str, *, model: str, messages: list, params: dict) -> dict:
    """The /v1/chat/completions body of one cell (the lane checks it as /v1 does)."""
    body = {"model": model, "messages": messages, **params}
    # Seeded from the cell's id where sampling draws, so a regenerated cell replays
    # its text; a greedy cell needs none, and without one identical cells share a
    # prompt-cache entry.
    if body.get("temperature", 1.0) != 0:
        body["seed"] = int(request_id[:8], 16) & 0x7FFFFFFF
    return body


def _run_lane(job: Job, lane, requests: list) -> list[dict] | None:
    if not requests:
        return []
    release_connection()  # the window waits on generations and budgets with none held
    return lane.run(requests, keep_going=job.keep_going, timeout_s=settings.EVAL_CELL_TIMEOUT_S,
                    no_worker_wait_s=settings.EVAL_NO_WORKER_WAIT_S)


def _failure(run, row, col, repeat: int, code: str, message: str) -> EvalResult:
    return EvalResult(run=run, column=col.column, row_id=row["id"], row_index=row["index"], repeat=repeat,
                      error_code=code, error_message=message[:2000], passed=None)


def _execute(job: Job, run: EvalRun, cells: list, lane, judges: list) -> list[EvalResult] | None:
    out: list[EvalResult] = []
    submitted: list[tuple[dict, _Column, int]] = []
    requests = []
    for row, col, repeat in cells:
        column = col.column
        try:
            _, messages = version_render(version=col.version, variables=row["variables"], body=col.body)
        except DomainError as exc:  # a missing or unknown variable: this row fails, the rest runs
            out.append(_failure(run, row, col, repeat, exc.code, exc.message))
            continue
        request_id = cell_request_id(run.pk, column.pk, row["id"], repeat)
        requests.append({"request_id": request_id, "prompt_version": str(col.version.pk),
                         "body": chat_body(request_id, model=column.model_name, messages=messages,
                                            params=column.params)})
        submitted.append((row, col, repeat))
    events = _run_lane(job, lane, requests)
    if events is None:
        return None
    done = []
    for (row, col, repeat), event in zip(submitted, events, strict=True):
        if event["type"] == "done":
            done.append((row, col, repeat, event))
        else:
            out.append(_failure(run, row, col, repeat, event.get("code") or "generation_failed",
                                event.get("message") or "the generation failed"))
    judged = _judge_all(job, run, done, lane, judges)
    if judged is None:
        return None
    for (row, col, repeat, event), extra in zip(done, judged, strict=True):
        out.append(_scored(run, row, col, event, extra, repeat=repeat))
    return out


def _judge_all(job: Job, run: EvalRun, done: list, lane, judges: list) -> list[dict] | None:
    """Each judge's score of each done cell ({key: score dict} per cell)."""
    scores: list[dict] = [{} for _ in done]
    for judge in judges:
        pending, requests = [], []
        for index, (row, col, repeat, event) in enumerate(done):
            output = event["result"].get("text", "")
            values = {**row["variables"], "output": output, "expected": row["expected"] or ""}
            try:
                _, messages = version_render(version=judge.version, body=judge.body,
                                             variables={k: v for k, v in values.items() if k in judge.uses})
            except DomainError as exc:
                score = Score(0.0, False, f"the judge could not render: {exc.message}")
                scores[index][judge.key] = score.as_dict()
                continue
            cell_id = cell_request_id(run.pk, col.column.pk, row["id"], repeat)
            request_id = uuid.uuid5(CELL_NAMESPACE, f"{cell_id}/judge/{judge.key}").hex
            requests.append({"request_id": request_id, "prompt_version": str(judge.version.pk),
                             "body": chat_body(request_id, model=judge.version.model_name, messages=messages,
                                               params=judge.params)})
            pending.append(index)
        events = _run_lane(job, lane, requests)
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


def _scored(run: EvalRun, row: dict, col: _Column, event: dict, judged: dict, *,
            repeat: int = 0) -> EvalResult:
    result = event["result"]
    output = result.get("text", "")
    # A version with tools: the reply's calls, as the gateway reads them ({name, arguments} each).
    calls = None
    if col.column.params.get("tools"):
        calls = [{"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
                 for c in parse_calls(output) or []]
    scores = score_output(run.evaluators, output=output, expected=row["expected"], variables=row["variables"],
                          tool_calls=calls)
    scores = {spec["key"]: (judged.get(spec["key"]) or scores.get(spec["key"])) for spec in run.evaluators}
    latency = result.get("latency_s")
    return EvalResult(run=run, column=col.column, row_id=row["id"], row_index=row["index"], repeat=repeat,
                      output=output, tool_calls=calls, scores=scores,
                      passed=all(s["passed"] for s in scores.values()) if scores else None,
                      latency_ms=int(latency * 1000) if isinstance(latency, int | float) else None,
                      prompt_tokens=result.get("prompt_tokens") or 0,
                      completion_tokens=result.get("completion_tokens") or 0,
                      served=str(result.get("served") or "")[:200], cache_hit=event.get("cache_hit") or "")


@dataclasses.dataclass
class _Work:
    run: EvalRun
    lane: object
    judges: list
    pending: list  # (row, column, repeat) cells not stored yet, in order


def _start(job: Job) -> _Work:
    job.write(status=RunStatus.RUNNING)
    job.rows().filter(started_at__isnull=True).update(started_at=timezone.now())
    run = EvalRun.objects.select_related("owner").get(pk=job.pk)
    columns = [_Column(c) for c in run.columns.select_related("prompt_version__payload_blob")]
    judges = [JudgePrompt(spec) for spec in run.evaluators if spec["name"] == "judge"]
    done = set(EvalResult.objects.filter(run=run).values_list("column_id", "row_id", "repeat"))
    rows = list(run.dataset_version.rows.order_by("index").values("id", "index", "variables", "expected"))
    pending = [(row, col, repeat) for row in rows for col in columns for repeat in range(run.repeats)
               if (col.column.pk, row["id"], repeat) not in done]
    return _Work(run=run, lane=_lane(run), judges=judges, pending=pending)


def _step(job: Job, work: _Work) -> str | None:
    """One window of cells, stored; "done" when none is left."""
    if not work.pending:
        return RunStatus.DONE
    window = max(1, settings.EVAL_RUN_WINDOW)
    cells = _execute(job, work.run, work.pending[:window], work.lane, work.judges)
    if cells is None:  # cancelled mid-window (what was in flight is dropped), or the lease lost
        return CANCELLED if job.cancelled() else BUSY
    EvalResult.objects.bulk_create(cells, ignore_conflicts=True)
    _progress(job)
    del work.pending[:window]
    return None


def _progress(job: Job) -> None:
    results = EvalResult.objects.filter(run_id=job.pk)
    job.rows().update(completed=results.count(), failed=results.exclude(error_code="").count())


def _finish(job: Job, work: _Work, outcome: str) -> str:
    _progress(job)
    job.end(status=outcome, summary=run_summary(EvalRun.objects.get(pk=job.pk)), finished_at=timezone.now())
    return outcome


RUN_JOB = JobKind(
    name="run", model=EvalRun, active=(RunStatus.QUEUED, RunStatus.RUNNING), lease_setting="EVAL_LEASE_S",
    start=_start, step=_step, finish=_finish, dispatch_setting="EVAL_DISPATCH",
    slots=Slots(user_field="owner", setting="EVAL_MAX_ACTIVE_RUNS", label="evaluation run"))


def evalrun_drive(run_id, *, owner: str | None = None) -> str:
    """Drive a run to its end (or to a cancel, or until another driver holds
    it). Returns the run's status, or "busy" when another driver holds it."""
    return drive(RUN_JOB, run_id, owner=owner)
