"""A prompt's pinned dataset: every version saved on the prompt runs over it
on its own, beside its parent, and the version's scores against the parent's
are read back for the history page.

The run starts once the version's transaction commits (a post_save of
PromptVersion, connected in evals.apps), as the version's author (or the
prompt's owner) with the pin's evaluators. A run that cannot start (the
author's EVAL_MAX_ACTIVE_RUNS, access to the dataset gone) is logged and
skipped: saving a version never fails for it.
"""

from __future__ import annotations

import logging

from core.commit import after_commit
from core.error_codes import DomainError
from core.ids import is_uuid
from playground.models import PromptVersion

from .evaluators import check_evaluators
from .models import DatasetPin, EvalRun, RunStatus
from .permissions import access_dataset, runs_visible_to
from .runs import evalrun_create

logger = logging.getLogger(__name__)


def pin_get(*, prompt) -> DatasetPin | None:
    return DatasetPin.objects.filter(prompt=prompt).select_related("dataset").first()


def pin_set(*, prompt, user, dataset_id, evaluators) -> DatasetPin:
    """Pin a dataset the user may view to the prompt (the caller checked they may
    edit it), replacing its pin."""
    dataset = access_dataset(user=user, dataset_id=dataset_id, need="view")
    specs = check_evaluators(evaluators)
    pin, _ = DatasetPin.objects.update_or_create(
        prompt=prompt, defaults={"dataset": dataset, "evaluators": specs, "created_by": user})
    return pin


def pin_delete(*, prompt) -> None:
    DatasetPin.objects.filter(prompt=prompt).delete()


def on_version_saved(sender, instance: PromptVersion, created: bool, raw: bool = False, **kwargs) -> None:
    """post_save of PromptVersion: a new version of a pinned prompt runs once it is committed."""
    if created and not raw and DatasetPin.objects.filter(prompt_id=instance.prompt_id).exists():
        after_commit(pinned_run_start, instance.pk)


def pinned_run_start(version_id) -> EvalRun | None:
    version = PromptVersion.objects.select_related("prompt__owner", "author").filter(pk=version_id).first()
    pin = DatasetPin.objects.filter(prompt_id=version.prompt_id).first() if version else None
    if pin is None:
        return None
    user = version.author or version.prompt.owner
    columns = [{"prompt": str(version.prompt_id), "version": str(v)}
               for v in (version.parent_id, version.pk) if v is not None]
    try:
        return evalrun_create(user=user, dataset_id=pin.dataset_id, columns=columns,
                              evaluators=[{"name": s["name"], "args": s["args"], "as": s["key"]}
                                          for s in pin.evaluators],
                              name=f"on save: v{version.number}")
    except DomainError as exc:
        logger.warning("pinned run of version %s not started: %s: %s", version_id, exc.code, exc.message)
        return None


def version_deltas(*, user, prompt, version_id) -> dict:
    """The newest run the user may see with a column for the version and one
    for its parent (the pinned dataset's first): per evaluator both means and
    the difference, once it is done; its status before."""
    versions = PromptVersion.objects.filter(prompt=prompt)
    version = versions.filter(pk=version_id).first() if is_uuid(version_id) else None
    if version is None:
        raise DomainError("Version not found.", code="version_not_found", field="version")
    pin = DatasetPin.objects.filter(prompt=prompt).select_related("dataset").first()
    body: dict = {"version": str(version.pk), "parent": str(version.parent_id) if version.parent_id else None,
                  "pinned_dataset": ({"id": str(pin.dataset_id), "name": pin.dataset.name} if pin else None),
                  "run": None}
    if version.parent_id is None:
        return body
    runs = (runs_visible_to(user=user).filter(columns__prompt_version=version)
            .filter(columns__prompt_version_id=version.parent_id)
            .exclude(status=RunStatus.CANCELLED).select_related("dataset_version__dataset").distinct())
    runs = runs.order_by("-created_at")
    pinned = runs.filter(dataset_version__dataset_id=pin.dataset_id).first() if pin is not None else None
    run = pinned or runs.first()
    if run is None:
        return body
    body["run"] = {"id": str(run.pk), "url": f"/evals/runs/{run.pk}/", "status": run.status,
                   "dataset": {"id": str(run.dataset_version.dataset_id),
                               "name": run.dataset_version.dataset.name,
                               "version": run.dataset_version.number},
                   "scores": {}}
    if run.status != RunStatus.DONE:
        return body
    index = {str(c.prompt_version_id): c.index for c in run.columns.all()}
    mine, theirs = (run.summary["columns"][index[str(v)]]["scores"] for v in (version.pk, version.parent_id))
    for key, entry in mine.items():
        before = theirs[key]["mean"]
        body["run"]["scores"][key] = {"version": entry["mean"], "parent": before,
                                      "delta": entry["mean"] - before}
    return body
