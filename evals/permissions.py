"""Who may do what to a dataset, and so to the runs over it.

    owner > editor > viewer > link holder

Roles come from the sharing module, as a prompt's do: grants to the account or
to a team it is in (sharing: viewer, editor, with expiry), and share
links (public, or login-required) presented as X-Share-Token. Link holders read
the dataset (versions, rows, export); viewers also run evaluations over it;
editors also make new versions (row edits, imports) and rename it; only the
owner shares, revokes and deletes. Nothing is cached: a revocation holds on the
next request. Someone with no role gets the same 404 as for a dataset that does
not exist.

A run is visible to whoever may view its dataset as an account (links are
bearer secrets for the rows, not for runs); only its creator (or the dataset's
owner) cancels or deletes it.
"""

from __future__ import annotations

from typing import Literal

from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.shortcuts import render

from core.error_codes import DomainError
from sharing import access
from sharing.kinds import Role, SubjectKind, register

from .models import Dataset, EvalRun

Need = Literal["read", "view", "edit", "own"]


def dataset_not_found() -> DomainError:
    return DomainError("Dataset not found.", code="dataset_not_found", field="dataset")


# Rows a dataset's link page shows; the rest through the API with the token.
SHARED_DATASET_ROWS = 200


def dataset_link_page(request, link, token: str, client_addr: str):
    """The dataset's newest rows, read-only."""
    dataset = access_dataset(user=request.user, dataset_id=link.dataset_id, need="read", share_token=token,
                             client_addr=client_addr)
    version = dataset.versions.order_by("-number").first()
    rows = list(version.rows.order_by("index")[:SHARED_DATASET_ROWS]) if version else []
    return render(request, "evals/dataset_shared.html",
                  {"dataset": dataset, "version": version, "rows": rows, "link": link})


DATASET = register(SubjectKind(
    name="dataset", model=Dataset, not_found=dataset_not_found,
    # read: what a link holder may do (rows, versions, export); view: an account's
    # read access, which also runs evaluations over the dataset.
    needs={"read": Role.LINK, "view": Role.VIEWER, "edit": Role.EDITOR, "own": Role.OWNER},
    read_only="Your access to this dataset is read-only.",
    link_page=dataset_link_page, url_name="api-dataset-{}", signed_out_checked=False,
))


def access_dataset(*, user, dataset_id, need: Need, share_token: str | None = None,
                   client_addr: str = "") -> Dataset:
    """The dataset if `user` (or the holder of `share_token`) has `need` on it;
    else 404 (no role) or 403 (too weak)."""
    return access.access(DATASET.name, user=user, pk=dataset_id, need=need, share_token=share_token,
                         client_addr=client_addr, version_id=None)


def request_dataset(request, *, dataset_id, need: Need) -> Dataset:
    """access_dataset for an HTTP request (its user, X-Share-Token, client address)."""
    return access.request_subject(request, DATASET.name, pk=dataset_id, need=need, version_id=None)


def datasets_visible_to(*, user) -> QuerySet[Dataset]:
    """Owned or granted (to the account or a team it is in); links are not listed."""
    return access.visible_to(DATASET.name, user=user)


def run_not_found() -> DomainError:
    return DomainError("Run not found.", code="run_not_found", field="run")


def access_run(*, user, run_id, need: Literal["view", "cancel", "delete"] = "view") -> EvalRun:
    try:
        run = EvalRun.objects.select_related("dataset_version__dataset").get(pk=run_id)
    except (EvalRun.DoesNotExist, ValidationError, ValueError) as exc:
        raise run_not_found() from exc
    dataset = run.dataset_version.dataset
    role = access.subject_role(user=user, kind=DATASET, subject=dataset)
    if role == Role.NONE:
        raise run_not_found()
    if need != "view" and run.owner_id != user.pk and role < Role.OWNER:
        raise DomainError(f"Only the run's creator or the dataset's owner may {need} it.", code="forbidden")
    return run


def runs_visible_to(*, user) -> QuerySet[EvalRun]:
    return EvalRun.objects.filter(dataset_version__dataset__in=datasets_visible_to(user=user))
