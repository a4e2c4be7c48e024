"""Who may do what to a dataset, and so to the runs over it.

    owner > editor > viewer

Viewers read rows and run evaluations over the dataset; editors also make new
versions (row edits, imports); only the owner grants and revokes. Grants are
read from the database on every call (a revocation holds on the next request).
Someone with no role gets the same 404 as for a dataset that does not exist.

A run is visible to whoever may view its dataset; only its creator (or the
dataset's owner) cancels it.
"""

from __future__ import annotations

from typing import Literal

from django.core.exceptions import ValidationError
from django.db.models import Exists, OuterRef, Q, QuerySet

from core.errors import ApiError

from ..permissions import Role
from .models import Dataset, DatasetGrant, EvalRun

Need = Literal["view", "edit", "own"]
_REQUIRED = {"view": Role.VIEWER, "edit": Role.EDITOR, "own": Role.OWNER}


def _signed_in(user) -> bool:
    return user is not None and user.is_authenticated


def dataset_not_found() -> ApiError:
    return ApiError("Dataset not found.", code="dataset_not_found", status_code=404, field="dataset")


def dataset_role(*, user, dataset: Dataset) -> Role:
    if not _signed_in(user):
        return Role.NONE
    if dataset.owner_id == user.pk:
        return Role.OWNER
    roles = set(DatasetGrant.objects.filter(dataset=dataset, user=user, revoked_at__isnull=True)
                .values_list("role", flat=True))
    if "editor" in roles:
        return Role.EDITOR
    return Role.VIEWER if roles else Role.NONE


def access_dataset(*, user, dataset_id, need: Need) -> Dataset:
    """The dataset if `user` has `need` on it; else 404 (no role) or 403 (too weak)."""
    try:
        dataset = Dataset.objects.get(pk=dataset_id)
    except (Dataset.DoesNotExist, ValidationError, ValueError) as exc:
        raise dataset_not_found() from exc
    role = dataset_role(user=user, dataset=dataset)
    if role == Role.NONE:
        raise dataset_not_found()
    if role < _REQUIRED[need]:
        raise ApiError("Only the owner may do this." if need == "own" else
                       "Your access to this dataset is read-only.", code="forbidden", status_code=403)
    dataset.access_role = role
    return dataset


def datasets_visible_to(*, user) -> QuerySet[Dataset]:
    if not _signed_in(user):
        return Dataset.objects.none()
    granted = DatasetGrant.objects.filter(dataset=OuterRef("pk"), user=user, revoked_at__isnull=True)
    return Dataset.objects.filter(Q(owner=user) | Exists(granted))


def run_not_found() -> ApiError:
    return ApiError("Run not found.", code="run_not_found", status_code=404, field="run")


def access_run(*, user, run_id, need: Literal["view", "cancel"] = "view") -> EvalRun:
    try:
        run = EvalRun.objects.select_related("dataset_version__dataset").get(pk=run_id)
    except (EvalRun.DoesNotExist, ValidationError, ValueError) as exc:
        raise run_not_found() from exc
    dataset = run.dataset_version.dataset
    role = dataset_role(user=user, dataset=dataset)
    if role == Role.NONE:
        raise run_not_found()
    if need == "cancel" and run.owner_id != user.pk and role < Role.OWNER:
        raise ApiError("Only the run's creator or the dataset's owner may cancel it.", code="forbidden",
                       status_code=403)
    return run


def runs_visible_to(*, user) -> QuerySet[EvalRun]:
    return EvalRun.objects.filter(dataset_version__dataset__in=datasets_visible_to(user=user))
