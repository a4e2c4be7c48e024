"""A version's evaluation scores over time: the finished runs with a column of
the version whose dataset the reader may see (evals.permissions), each with the
column's mean score and 95% interval per evaluator (evals.summary, stored with
the run)."""

from __future__ import annotations

from evals.models import EvalColumn, RunStatus
from evals.permissions import runs_visible_to
from playground.models import PromptVersion

RUNS_SHOWN = 20


def version_eval_scores(*, user, version: PromptVersion) -> list[dict]:
    """Oldest first, the newest RUNS_SHOWN runs: {"run", "name", "dataset", "finished_at", "scores"}."""
    columns = (EvalColumn.objects.filter(prompt_version=version, run__status=RunStatus.DONE,
                                         run__in=runs_visible_to(user=user))
               .select_related("run", "run__dataset_version__dataset").order_by("-run__finished_at")
               [:RUNS_SHOWN])
    out = []
    for column in columns:
        run = column.run
        summary = next((c for c in run.summary.get("columns", []) if c.get("column") == column.index), None)
        if summary is None:
            continue
        out.append({"run": str(run.pk), "name": run.name, "dataset": run.dataset_version.dataset.name,
                    "finished_at": run.finished_at,
                    "scores": {key: {"mean": s["mean"], "ci95": s["ci95"]}
                               for key, s in summary.get("scores", {}).items()}})
    return out[::-1]
