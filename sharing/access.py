"""The one place that decides who may do what to a shared object (a prompt, a
dataset: any kind of sharing.kinds).

API views, pages, websocket consumers, export and presign all call `access`
(or `request_subject`, which reads the share token from the request) through
their app's wrapper (playground.permissions, evals.permissions), and never check
roles by hand. Roles, strongest first:

    owner > editor > viewer > link holder

Editors and viewers come from live grants to the user or to a team the user
is a member of; a link holder presents a live share token (`public`: anyone,
signed out too; `login`: signed-in users only). What each role may do is the
kind's `needs`: for a prompt, viewers and link holders read, run and fork;
editors also create versions and move labels; only the owner shares, grants,
revokes and transfers.

Nothing here is cached: every call reads grants, memberships and links from
the database, so a revocation on any server process holds on the next
request. Someone with no role gets the same 404 as for an object that does
not exist; someone with a role too weak for the action gets 403 `forbidden`.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from core.clientip import client_ip
from core.error_codes import DomainError

from .kinds import KINDS, Role, SubjectKind
from .models import Grant, GrantRole, LinkMode
from .tokens import link_resolve

# version_id for actions that span every version (lists, tree, diff, labels);
# None means the object's own metadata only.
ALL_VERSIONS = "all"
SHARE_TOKEN_HEADER = "X-Share-Token"


def _signed_in(user) -> bool:
    return user is not None and user.is_authenticated


def live_grants_for(*, user) -> QuerySet[Grant]:
    """Unrevoked, unexpired grants to `user` directly or to any team they are in now."""
    now = timezone.now()
    return (Grant.objects.filter(revoked_at__isnull=True)
            .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
            .filter(Q(user=user) | Q(team__members=user)))


def subject_role(*, user, kind: SubjectKind, subject) -> Role:
    """The user's role from ownership and grants (links are not accounts)."""
    if not _signed_in(user):
        return Role.NONE
    if subject.owner_id == user.pk:
        return Role.OWNER
    roles = set(live_grants_for(user=user).filter(**{kind.name: subject}).values_list("role", flat=True))
    if GrantRole.EDITOR in roles:
        return Role.EDITOR
    return Role.VIEWER if roles else Role.NONE


def access(kind_name: str, *, user, pk, need: str, share_token: str | None = None, client_addr: str = "",
           version_id=ALL_VERSIONS, for_update: bool = False):
    """The object if `user` (or the holder of `share_token`) has `need` on it
    (for a versioned kind: on the versions named by `version_id`); else 404 (no
    role) or 403 (a role too weak). The result carries `access_role` and
    `pinned_version_id`."""
    kind = KINDS[kind_name]
    if need not in kind.needs:
        raise ValueError(f"unknown access level {need!r}")
    # Resolve the token first so the guessing limit applies whatever the object's id.
    link = link_resolve(token=share_token, client_addr=client_addr) if share_token is not None else None
    queryset = kind.model.objects.select_for_update() if for_update else kind.model.objects
    try:
        subject = queryset.get(pk=pk)
    except (kind.model.DoesNotExist, ValidationError, ValueError) as exc:
        raise kind.not_found() from exc
    role = subject_role(user=user, kind=kind, subject=subject)
    pinned = None
    if (role < Role.VIEWER and link is not None and getattr(link, f"{kind.name}_id") == subject.pk
            and (link.mode == LinkMode.PUBLIC or _signed_in(user))):
        role, pinned = Role.LINK, link.version_id
    if role == Role.NONE:
        raise kind.not_found()
    if role < kind.needs[need]:
        raise DomainError("Only the owner may do this." if kind.needs[need] == Role.OWNER else kind.read_only,
                          code="forbidden")
    if need in kind.signed_in_needs and not _signed_in(user):
        raise DomainError(kind.signed_in_needs[need], code="login_required")
    if pinned is not None:
        if version_id == ALL_VERSIONS:
            raise DomainError("This link shares one version only.", code="forbidden")
        if version_id is not None and str(version_id) != str(pinned):
            raise DomainError(code="version_not_found", field="version")
    subject.access_role = role
    subject.pinned_version_id = pinned
    return subject


def client_address(request) -> str:
    # X-Forwarded-For only from TRUSTED_PROXIES: from anyone else it would let
    # a guesser pick its own bucket.
    return client_ip(request.META)


def request_subject(request, kind_name: str, *, pk, need: str, version_id=ALL_VERSIONS,
                    for_update: bool = False):
    """access for an HTTP request: the user, the X-Share-Token header and the
    client address come from `request`."""
    return access(kind_name, user=request.user, pk=pk, need=need,
                  share_token=request.headers.get(SHARE_TOKEN_HEADER), client_addr=client_address(request),
                  version_id=version_id, for_update=for_update)


def visible_to(kind_name: str, *, user) -> QuerySet:
    """Every object of the kind `user` may view as an account (owned or granted),
    for lists and search. Links are bearer secrets, not memberships: not listed."""
    kind = KINDS[kind_name]
    if not _signed_in(user):
        return kind.model.objects.none()
    granted = live_grants_for(user=user).filter(**{kind.name: OuterRef("pk")})
    return kind.model.objects.filter(Q(owner=user) | Exists(granted))


def shared_with(kind_name: str, *, user) -> QuerySet:
    """Objects of the kind others have granted to `user` (directly or via a
    team), with `is_editor` telling the strongest live role."""
    kind = KINDS[kind_name]
    if not _signed_in(user):
        return kind.model.objects.none()
    grants = live_grants_for(user=user).filter(**{kind.name: OuterRef("pk")})
    return (kind.model.objects.filter(Exists(grants)).exclude(owner=user).select_related("owner")
            .annotate(is_editor=Exists(grants.filter(role=GrantRole.EDITOR))))
