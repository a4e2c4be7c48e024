"""The gate on labels: a label may require a passing run before it moves.

A `LabelGate` names a dataset, an evaluator (by its key in the run) and a
margin. A move of a gated label must name a run (`require_eval=<run id>`)
that is finished, ran over a version of that dataset, and has a column with
the candidate version and (when the label points somewhere now) one with the
version the label holds; the candidate's mean score must be at least the
baseline's minus the margin. A move without a gate may still name a run:
then the run's first evaluator and a margin of 0 apply.

Every gated decision, passed or refused, is recorded (GateDecision) with the
figures and the run, and a refusal is a 409 whose body says why and links the run.
"""

from __future__ import annotations

from typing import NamedTuple

from django.db import transaction

from core.error_codes import DomainError
from sharing.audit import audit_record

from .models import EvalRun, GateDecision, LabelGate, RunStatus
from .permissions import access_dataset, access_run


def gate_get(*, prompt, name: str) -> LabelGate | None:
    return LabelGate.objects.filter(prompt=prompt, label_name=name).select_related("dataset").first()


def gate_set(*, prompt, name: str, user, dataset_id, evaluator: str, margin: float) -> LabelGate:
    """Create or replace the gate of label `name` (the caller may edit the prompt;
    the dataset must be one they can view)."""
    from playground.services import _check_label_name

    _check_label_name(name)
    dataset = access_dataset(user=user, dataset_id=dataset_id, need="view")
    if not isinstance(evaluator, str) or not evaluator:
        raise DomainError("Name the evaluator (its key in the runs) the gate compares.",
                          code="invalid_request",
                          field="evaluator")
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 <= margin <= 1:
        raise DomainError("margin is a score difference from 0 to 1.", code="out_of_range", field="margin")
    with transaction.atomic():
        gate, _ = LabelGate.objects.update_or_create(
            prompt=prompt, label_name=name,
            defaults={"dataset": dataset, "evaluator": evaluator, "margin": float(margin),
                      "created_by": user})
        audit_record(prompt_id=prompt.pk, actor=user, action="label.gate_set", target=f"label:{name}",
                     detail={"dataset": str(dataset.pk), "evaluator": evaluator, "margin": float(margin)})
    return gate


def gate_clear(*, prompt, name: str, user) -> None:
    """Remove the gate of label `name` (404 gate_not_found when it has none)."""
    with transaction.atomic():
        gate = LabelGate.objects.select_for_update().filter(prompt=prompt, label_name=name).first()
        if gate is None:
            raise DomainError(f"Label {name!r} has no gate.", code="gate_not_found")
        audit_record(prompt_id=prompt.pk, actor=user, action="label.gate_cleared", target=f"label:{name}",
                     detail={"dataset": str(gate.dataset_id), "evaluator": gate.evaluator,
                             "margin": gate.margin})
        gate.delete()


def _check_move(*, prompt, name: str, candidate_id, baseline_id) -> None:
    """What the move itself would refuse, refused before the gate decides (and
    records): a candidate that is not a version of this prompt, a label that
    does not hold `baseline_id` (compare-and-set)."""
    from playground.models import Label, PromptVersion
    from playground.services import _conflict

    if not PromptVersion.objects.filter(pk=candidate_id, prompt=prompt).exists():
        raise DomainError("The version is not a version of this prompt.", code="version_not_found",
                          field="version")
    current = Label.objects.filter(prompt=prompt, name=name).values_list("version_id", flat=True).first()
    if str(current) != str(baseline_id):
        raise _conflict(name, current)


def run_url(run_id) -> str:
    return f"/evals/runs/{run_id}/"


def _column_mean(run: EvalRun, version_id, key: str) -> tuple[int, dict] | None:
    for column in run.columns.order_by("index"):
        if str(column.prompt_version_id) == str(version_id):
            entry = run.summary["columns"][column.index]
            return column.index, entry["scores"].get(key)
    return None


class Verdict(NamedTuple):
    """What the gate says of a move behind a run: `code` is eval_passed or the
    eval_* code it refuses with."""

    passed: bool
    code: str
    reason: str
    figures: dict


def gate_verdict(*, gate: LabelGate | None, run: EvalRun, candidate_id,
                 baseline_id) -> Verdict:
    """What the gate says of moving from `baseline_id` to `candidate_id` behind
    `run` (no gate: the run's first evaluator, margin 0). Records nothing."""
    if run.status != RunStatus.DONE:
        return Verdict(False, code="eval_not_finished", reason=f"The run is {run.status}; it must be done.",
                       figures={})
    if gate is not None and run.dataset_version.dataset_id != gate.dataset_id:
        return Verdict(False, code="eval_wrong_dataset", reason=(
            f"The run is over dataset {run.dataset_version.dataset.name!r}; the gate needs "
            f"{gate.dataset.name!r}."), figures={})
    key = gate.evaluator if gate else (run.evaluators[0]["key"] if run.evaluators else "")
    margin = gate.margin if gate else 0.0
    if key not in {spec["key"] for spec in run.evaluators}:
        return Verdict(False, code="eval_wrong_evaluator", figures={},
                       reason=f"The run has no evaluator {key!r}." if key else "The run scored nothing.")
    candidate = _column_mean(run, candidate_id, key)
    if candidate is None:
        return Verdict(False, code="eval_candidate_missing",
                       reason="The run has no column with the version the label would move to.", figures={})
    figures = {"evaluator": key, "margin": margin, "candidate": candidate[1],
               "dataset_version": run.dataset_version.number}
    if baseline_id is not None:
        baseline = _column_mean(run, baseline_id, key)
        if baseline is None:
            return Verdict(False, code="eval_baseline_missing", figures=figures, reason=(
                "The run has no column with the version the label holds now (the baseline)."))
        figures["baseline"] = baseline[1]
        if candidate[1]["mean"] + 1e-12 < baseline[1]["mean"] - margin:
            return Verdict(False, code="eval_regression", figures=figures, reason=(
                f"The candidate scores {candidate[1]['mean']:.3f} on {key}; the version the label holds "
                f"scores {baseline[1]['mean']:.3f} and the margin is {margin:g}."))
    return Verdict(True, code="eval_passed", figures=figures,
                   reason=f"The candidate scores {candidate[1]['mean']:.3f} on {key}.")


def gate_check(*, prompt, name: str, user, candidate_id, baseline_id, run_id) -> GateDecision | None:
    """Decide a move of `name` from `baseline_id` to `candidate_id`. Returns
    None when no gate applies and no run was named; raises 409 eval_* (after
    recording the refusal) when the move may not happen."""
    gate = gate_get(prompt=prompt, name=name)
    if gate is None and run_id is None:
        return None
    _check_move(prompt=prompt, name=name, candidate_id=candidate_id, baseline_id=baseline_id)
    if run_id is None:
        return _refuse(gate, None, user, candidate_id, baseline_id, "eval_required",
                       f"Label {name!r} moves only behind a passing run over dataset "
                       f"{gate.dataset.name!r}: add ?require_eval=<run id>.", {})
    run = access_run(user=user, run_id=run_id)
    verdict = gate_verdict(gate=gate, run=run, candidate_id=candidate_id, baseline_id=baseline_id)
    if not verdict.passed:
        return _refuse(gate, run, user, candidate_id, baseline_id, *verdict[1:])
    return _record(gate, run, user, candidate_id, baseline_id, True, *verdict[1:])


def _record(gate, run, user, candidate_id, baseline_id, passed, code, reason, figures) -> GateDecision | None:
    if gate is None:
        return None  # no gate: nothing to keep a history of
    return GateDecision.objects.create(gate=gate, run=run, candidate_version_id=candidate_id,
                                       baseline_version_id=baseline_id, passed=passed, code=code,
                                       reason=reason, figures=figures, actor=user)


def _refuse(gate, run, user, candidate_id, baseline_id, code, reason, figures):
    decision = _record(gate, run, user, candidate_id, baseline_id, False, code, reason, figures)
    raise DomainError(reason, code=code, field="require_eval", extra={
        "run": str(run.pk) if run else None, "run_url": run_url(run.pk) if run else None,
        "figures": figures, "decision": decision.pk if decision else None})
