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
owner) cancels it.
"""

from __future__ import annotations

from typing import Literal

from django.core.exceptions import ValidationError
from django.db.models import Exists, OuterRef, Q, QuerySet

from core.error_codes import DomainError
from playground.permissions import SHARE_TOKEN_HEADER, Role, client_address, live_grants_for
from sharing.models import GrantRole, LinkMode
from sharing.tokens import link_resolve

from .models import Dataset, EvalRun

Need = Literal["read", "view", "edit", "own"]
# read: what a link holder may do (rows, versions, export); view: an account's
# read access, which also runs evaluations over the dataset.
_REQUIRED = {"read": Role.LINK, "view": Role.VIEWER, "edit": Role.EDITOR, "own": Role.OWNER}


def _signed_in(user) -> bool:
    return user is not None and user.is_authenticated


def dataset_not_found() -> DomainError:
    return DomainError("Dataset not found.", code="dataset_not_found", field="dataset")


def dataset_role(*, user, dataset: Dataset) -> Role:
    if not _signed_in(user):
        return Role.NONE
    if dataset.owner_id == user.pk:
        return Role.OWNER
    roles = set(live_grants_for(user=user).filter(dataset=dataset).values_list("role", flat=True))
    if GrantRole.EDITOR in roles:
        return Role.EDITOR
    return Role.VIEWER if roles else Role.NONE


def access_dataset(*, user, dataset_id, need: Need, share_token: str | None = None,
                   client_addr: str = "") -> Dataset:
    """The dataset if `user` (or the holder of `share_token`) has `need` on it;
    else 404 (no role) or 403 (too weak)."""
    # Resolve the token first so the guessing limit applies whatever the dataset id.
    link = link_resolve(token=share_token, client_addr=client_addr) if share_token is not None else None
    try:
        dataset = Dataset.objects.get(pk=dataset_id)
    except (Dataset.DoesNotExist, ValidationError, ValueError) as exc:
        raise dataset_not_found() from exc
    role = dataset_role(user=user, dataset=dataset)
    if (role < Role.VIEWER and link is not None and link.dataset_id == dataset.pk
            and (link.mode == LinkMode.PUBLIC or _signed_in(user))):
        role = Role.LINK
    if role == Role.NONE:
        raise dataset_not_found()
    if role < _REQUIRED[need]:
        raise DomainError("Only the owner may do this." if need == "own" else
                          "Your access to this dataset is read-only.", code="forbidden")
    dataset.access_role = role
    return dataset


def request_dataset(request, *, dataset_id, need: Need) -> Dataset:
    """access_dataset for an HTTP request (its user, X-Share-Token, client address)."""
    return access_dataset(user=request.user, dataset_id=dataset_id, need=need,
                          share_token=request.headers.get(SHARE_TOKEN_HEADER),
                          client_addr=client_address(request))


def datasets_visible_to(*, user) -> QuerySet[Dataset]:
    """Owned or granted (to the account or a team it is in); links are not listed."""
    if not _signed_in(user):
        return Dataset.objects.none()
    granted = live_grants_for(user=user).filter(dataset=OuterRef("pk"))
    return Dataset.objects.filter(Q(owner=user) | Exists(granted))


def run_not_found() -> DomainError:
    return DomainError("Run not found.", code="run_not_found", field="run")


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
        raise DomainError("Only the run's creator or the dataset's owner may cancel it.", code="forbidden")
    return run


def runs_visible_to(*, user) -> QuerySet[EvalRun]:
    return EvalRun.objects.filter(dataset_version__dataset__in=datasets_visible_to(user=user))
