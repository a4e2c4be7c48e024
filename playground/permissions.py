"""The one place that decides who may do what to a prompt.

API views, pages, websocket consumers, export and presign all call
`access_prompt` (or `request_access`, which reads the share token from the
request) and never check roles by hand. Roles, strongest first:

    owner > editor > viewer > link holder

Editors and viewers come from live grants to the user or to a team the user
is a member of; a link holder presents a live share token (`public`: anyone,
signed out too; `login`: signed-in users only). Viewers and link holders
read, run and fork; editors also create versions and move labels; only the
owner shares, grants, revokes and transfers.

Nothing here is cached: every call reads grants, memberships and links from
the database, so a revocation on any server process holds on the next
request. Someone with no role gets the same 404 as for a prompt that does
not exist; someone with a role too weak for the action gets 403 `forbidden`.
"""

from __future__ import annotations

import enum
from typing import Literal

from django.core.exceptions import ValidationError
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from core.clientip import client_ip
from core.error_codes import DomainError
from sharing.models import Grant, GrantRole, LinkMode
from sharing.tokens import link_resolve

from .models import Prompt

Need = Literal["view", "fork", "edit", "own"]
# version_id for actions that span every version (lists, tree, diff, labels);
# None means the prompt's own metadata only.
ALL_VERSIONS = "all"
SHARE_TOKEN_HEADER = "X-Share-Token"


class Role(enum.IntEnum):
    NONE = 0
    LINK = 1
    VIEWER = 2
    EDITOR = 3
    OWNER = 4


_REQUIRED = {"view": Role.LINK, "fork": Role.LINK, "edit": Role.EDITOR, "own": Role.OWNER}


def _not_found() -> DomainError:
    return DomainError("Prompt not found.", code="prompt_not_found")


def _forbidden(message: str) -> DomainError:
    return DomainError(message, code="forbidden")


def _signed_in(user) -> bool:
    return user is not None and user.is_authenticated


def live_grants_for(*, user) -> QuerySet[Grant]:
    """Unrevoked, unexpired grants to `user` directly or to any team they are in now."""
    now = timezone.now()
    return (Grant.objects.filter(revoked_at__isnull=True)
            .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
            .filter(Q(user=user) | Q(team__members=user)))


def prompt_role(*, user, prompt: Prompt) -> Role:
    """The user's role from ownership and grants (links are not accounts)."""
    if not _signed_in(user):
        return Role.NONE
    if prompt.owner_id == user.pk:
        return Role.OWNER
    roles = set(live_grants_for(user=user).filter(prompt=prompt).values_list("role", flat=True))
    if GrantRole.EDITOR in roles:
        return Role.EDITOR
    return Role.VIEWER if roles else Role.NONE


def access_prompt(*, user, prompt_id, need: Need, share_token: str | None = None, client_addr: str = "",
                  version_id=ALL_VERSIONS, for_update: bool = False) -> Prompt:
    """The prompt if `user` (or the holder of `share_token`) has `need` on it,
    for the versions named by `version_id`; else 404 (no role) or 403 (a role
    too weak). The result carries `access_role` and `pinned_version_id`."""
    if need not in _REQUIRED:
        raise ValueError(f"unknown access level {need!r}")
    # Resolve the token first so the guessing limit applies whatever the prompt id.
    link = link_resolve(token=share_token, client_addr=client_addr) if share_token is not None else None
    queryset = Prompt.objects.select_for_update() if for_update else Prompt.objects
    try:
        prompt = queryset.get(pk=prompt_id)
    except (Prompt.DoesNotExist, ValidationError, ValueError) as exc:
        raise _not_found() from exc
    role = prompt_role(user=user, prompt=prompt)
    pinned = None
    if (role < Role.VIEWER and link is not None and link.prompt_id == prompt.pk
            and (link.mode == LinkMode.PUBLIC or _signed_in(user))):
        role, pinned = Role.LINK, link.version_id
    if role == Role.NONE:
        raise _not_found()
    if role < _REQUIRED[need]:
        raise _forbidden("Only the owner may do this." if need == "own" else
                         "Your access to this prompt is read-only.")
    if need == "fork" and not _signed_in(user):
        raise DomainError("Sign in to fork a prompt into your library.", code="login_required")
    if pinned is not None:
        if version_id == ALL_VERSIONS:
            raise _forbidden("This link shares one version only.")
        if version_id is not None and str(version_id) != str(pinned):
            raise DomainError(code="version_not_found", field="version")
    prompt.access_role = role
    prompt.pinned_version_id = pinned
    return prompt


def client_address(request) -> str:
    # X-Forwarded-For only from TRUSTED_PROXIES: from anyone else it would let
    # a guesser pick its own bucket.
    return client_ip(request.META)


def request_access(request, *, prompt_id, need: Need, version_id=ALL_VERSIONS,
                   for_update: bool = False) -> Prompt:
    """access_prompt for an HTTP request: the user, the X-Share-Token header
    and the client address come from `request`."""
    return access_prompt(user=request.user, prompt_id=prompt_id, need=need,
                         share_token=request.headers.get(SHARE_TOKEN_HEADER),
                         client_addr=client_address(request),
                         version_id=version_id, for_update=for_update)


def prompts_visible_to(*, user) -> QuerySet[Prompt]:
    """Every prompt `user` may view as an account (owned or granted), for lists
    and search. Links are bearer secrets, not memberships: not listed."""
    if not _signed_in(user):
        return Prompt.objects.none()
    granted = live_grants_for(user=user).filter(prompt=OuterRef("pk"))
    return Prompt.objects.filter(Q(owner=user) | Exists(granted))


def prompts_shared_with(*, user) -> QuerySet[Prompt]:
    """Prompts others have granted to `user` (directly or via a team), with
    `is_editor` telling the strongest live role."""
    if not _signed_in(user):
        return Prompt.objects.none()
    grants = live_grants_for(user=user).filter(prompt=OuterRef("pk"))
    return (Prompt.objects.filter(Exists(grants)).exclude(owner=user).select_related("owner")
            .annotate(is_editor=Exists(grants.filter(role=GrantRole.EDITOR))))
