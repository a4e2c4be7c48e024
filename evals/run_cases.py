"""A playground run saved as a test case: a new version of a dataset the caller
may edit, with the run's variables as the row's inputs and its output as the
expected output."""

from __future__ import annotations

from playground.runs import run_get

from .datasets import dataset_version_create
from .models import DatasetVersion
from .permissions import access_dataset


def run_test_case_add(*, user, run_id, dataset_id) -> DatasetVersion:
    """404 `run_not_found` for a run the caller may not see; 404 `dataset_not_found`
    for a dataset they may not see, 403 `forbidden` for one they may only read."""
    run = run_get(user=user, run_id=run_id)
    dataset = access_dataset(user=user, dataset_id=dataset_id, need="edit")
    latest = dataset.versions.order_by("-number").values_list("pk", flat=True).first()
    return dataset_version_create(dataset=dataset, author=user, base_version_id=latest,
                                  add=[{"variables": run.variables, "expected": run.output,
                                        "metadata": {"run": str(run.pk)}}],
                                  message=f"saved from playground run {run.pk}")
