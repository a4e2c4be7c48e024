"""A generation saved as a test case: a new version of a dataset the caller may
edit, with the generation's variables as the row's inputs and the expected
output as the caller edited it (by default the generation's output)."""

from __future__ import annotations

from evals.datasets import dataset_version_create
from evals.models import DatasetVersion
from evals.permissions import access_dataset

from .selectors import generation_get, generation_output


def generation_test_case_add(*, user, generation_id, dataset_id,
                             expected: str | None = None) -> DatasetVersion:
    """404 `generation_not_found` for a generation the caller may not see; 404
    `dataset_not_found` for a dataset they may not see, 403 `forbidden` for one they may only read."""
    generation = generation_get(user=user, generation_id=generation_id)
    dataset = access_dataset(user=user, dataset_id=dataset_id, need="edit")
    latest = dataset.versions.order_by("-number").values_list("pk", flat=True).first()
    return dataset_version_create(
        dataset=dataset, author=user, base_version_id=latest,
        add=[{"variables": generation.variables,
              "expected": generation_output(generation) if expected is None else expected,
              "metadata": {"generation": generation.pk, "version": str(generation.version_id)}}],
        message=f"saved from generation {generation.pk}")
