"""The runs that can decide a gated move: a version's runs over the gate's
dataset, each with what the gate would say of it now (nothing recorded), and
starting one (the candidate and the version the label holds, scored by the
gate's evaluator)."""

from __future__ import annotations

from core.error_codes import DomainError
from core.ids import is_uuid
from playground.models import Label, PromptVersion

from .gate import Verdict, gate_get, gate_verdict
from .models import EvalRun, LabelGate
from .permissions import runs_visible_to
from .runs import evalrun_create

# The newest runs listed for one candidate.
GATE_RUNS_LISTED = 20


def gate_or_404(*, prompt, name: str) -> LabelGate:
    gate = gate_get(prompt=prompt, name=name)
    if gate is None:
        raise DomainError(f"Label {name!r} has no gate.", code="gate_not_found")
    return gate


def _candidate(prompt, version_id) -> PromptVersion:
    if not isinstance(version_id, str) or not is_uuid(version_id):
        raise DomainError("version must be a version id.", code="invalid_request", field="version")
    version = PromptVersion.objects.filter(pk=version_id, prompt=prompt).first()
    if version is None:
        raise DomainError("The version is not a version of this prompt.", code="version_not_found",
                          field="version")
    return version


def _baseline_id(prompt, name: str):
    return Label.objects.filter(prompt=prompt, name=name).values_list("version_id", flat=True).first()


def gate_runs(*, prompt, name: str, user, version_id) -> list[tuple[EvalRun, Verdict]]:
    """The newest runs over the gate's dataset with a column for the version, each
    with the gate's verdict on moving the label (from where it is now) to it."""
    gate = gate_or_404(prompt=prompt, name=name)
    candidate = _candidate(prompt, version_id)
    baseline = _baseline_id(prompt, name)
    runs = (runs_visible_to(user=user)
            .filter(dataset_version__dataset=gate.dataset, columns__prompt_version=candidate)
            .select_related("dataset_version__dataset", "owner").distinct()
            .order_by("-created_at", "-id")[:GATE_RUNS_LISTED])
    return [(run, gate_verdict(gate=gate, run=run, candidate_id=candidate.pk, baseline_id=baseline))
            for run in runs]


def _evaluator_spec(gate: LabelGate) -> dict:
    """The gate's evaluator as the newest run over the dataset configured it
    (its arguments); else the evaluator of that name with its defaults."""
    runs = EvalRun.objects.filter(dataset_version__dataset=gate.dataset).order_by("-created_at")
    for evaluators in runs.values_list("evaluators", flat=True)[:50]:
        for spec in evaluators:
            if spec["key"] == gate.evaluator:
                return {"name": spec["name"], "args": spec["args"], "as": gate.evaluator}
    return {"name": gate.evaluator}


def gate_run_start(*, prompt, name: str, user, version_id) -> tuple[EvalRun, Verdict]:
    """A run over the gate's dataset (newest version) of the candidate and of
    the version the label holds, scored by the gate's evaluator; and the gate's
    verdict on it so far."""
    gate = gate_or_404(prompt=prompt, name=name)
    candidate = _candidate(prompt, version_id)
    baseline = _baseline_id(prompt, name)
    versions = [candidate.pk] + ([baseline] if baseline and baseline != candidate.pk else [])
    run = evalrun_create(user=user, dataset_id=gate.dataset_id, evaluators=[_evaluator_spec(gate)],
                         columns=[{"prompt": str(prompt.pk), "version": str(v)} for v in versions],
                         name=f"Gate of {name}: v{candidate.number}")
    return run, gate_verdict(gate=gate, run=run, candidate_id=candidate.pk, baseline_id=baseline)
