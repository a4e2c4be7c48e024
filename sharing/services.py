"""Writes for sharing: links and grants of any kind of object (sharing.kinds),
each named by its kind's keyword (`prompt=`, `dataset=`). Each change and its
audit event commit together. Callers have already passed the kind's access
check with need="own"."""

from __future__ import annotations

import dataclasses

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Team
from core.error_codes import DomainError
from core.ids import parse_uint

from .audit import audit_record
from .kinds import SubjectKind, subject_of
from .models import Grant, GrantRole, LinkMode, ShareLink
from .tokens import token_generate, token_hash

User = get_user_model()


@dataclasses.dataclass(frozen=True)
class _Subject:
    """What a link or grant shares, and its kind."""

    kind: SubjectKind
    obj: object

    @classmethod
    def of(cls, kwargs: dict) -> _Subject:
        return cls(*subject_of(kwargs))

    @property
    def rows(self) -> dict:
        """The filter (and create) arguments of its links and grants."""
        return {self.kind.name: self.obj}

    @property
    def owner_id(self):
        return self.obj.owner_id

    def audit(self, **fields) -> None:
        audit_record(**{f"{self.kind.name}_id": self.obj.pk}, **fields)

    def emit(self, event: str, data: dict) -> None:
        if self.kind.changed is not None:
            self.kind.changed(self.obj, event, data)


def _check_expiry(expires_at, field: str = "expires_at") -> None:
    if expires_at is not None and expires_at <= timezone.now():
        raise DomainError("The expiry must be in the future.", code="invalid_expiry", field=field)


def user_by_username(username: str):
    user = User.objects.filter(username=username or "", is_active=True).first()
    if user is None:
        raise DomainError(f"No user named {username!r}.", code="user_not_found",
                          field="username")
    return user


def link_create(*, actor, mode: str, name: str = "", version_id=None, expires_at=None,
                role: str | None = None, **subject) -> tuple[ShareLink, str]:
    """A new link and its token; the token is returned once and never stored."""
    subject = _Subject.of(subject)
    if role is not None and role != GrantRole.VIEWER:
        raise DomainError("A link can only give view access; grant an account or team to let them edit.",
                          code="invalid_mode", field="role")
    if mode not in LinkMode.values:
        raise DomainError(f"mode must be one of {', '.join(LinkMode.values)}.", code="invalid_mode",
                          field="mode")
    if len(name) > 100:
        raise DomainError("The name is at most 100 characters.", code="invalid_request", field="name")
    version = None
    if version_id is not None and subject.kind.version_model is None:
        raise DomainError(f"A {subject.kind.name} link reaches all its versions; it takes no version.",
                          code="unsupported_parameter", field="version")
    if version_id is not None:
        version = subject.kind.version_model.objects.filter(**subject.rows, pk=version_id).first()
        if version is None:
            raise DomainError("The version is not a version of this prompt.", code="version_not_found",
                              field="version")
    _check_expiry(expires_at)
    raw = token_generate()
    with transaction.atomic():
        link = ShareLink.objects.create(version=version, mode=mode, name=name, token_hash=token_hash(raw),
                                        created_by=actor, expires_at=expires_at, **subject.rows)
        subject.audit(actor=actor, action="link.create", target=f"link:{link.pk}",
                      detail={"name": name, "mode": mode, "version": str(version_id) if version_id else None,
                              "expires_at": expires_at.isoformat() if expires_at else None})
        subject.emit("share.created", {"kind": "link", "id": str(link.pk), "mode": mode, "name": name,
                                       "version": str(version_id) if version_id else None})
    return link, raw


def link_revoke(*, link_id, actor, **subject) -> ShareLink:
    """Idempotent: revoking a revoked link changes nothing and audits nothing."""
    subject = _Subject.of(subject)
    with transaction.atomic():
        link = ShareLink.objects.select_for_update().filter(pk=link_id, **subject.rows).first()
        if link is None:
            raise DomainError("Link not found.", code="link_not_found")
        if link.revoked_at is None:
            link.revoked_at = timezone.now()
            link.save(update_fields=["revoked_at"])
            subject.audit(actor=actor, action="link.revoke", target=f"link:{link.pk}",
                          detail={"name": link.name})
            subject.emit("share.revoked", {"kind": "link", "id": str(link.pk), "name": link.name})
    return link


def grant_upsert(*, actor, role: str, user=None, team=None, expires_at=None, **subject) -> Grant:
    """Create the live grant for a grantee (`user` or `team`), or change the one there is."""
    return _grant_upsert(subject=_Subject.of(subject), actor=actor, role=role, user=user, team=team,
                         expires_at=expires_at)


def _grant_target(grant: Grant) -> str:
    return f"user:{grant.user.username}" if grant.user_id else f"team:{grant.team_id}"


def _grant_upsert(*, subject: _Subject, actor, role: str, user=None, team=None, expires_at=None) -> Grant:
    """Create the live grant for a grantee, or change the one there is."""
    grantee = {"user": user} if user is not None else {"team": team}
    with transaction.atomic():
        grant = Grant.objects.select_for_update().filter(revoked_at__isnull=True, **subject.rows,
                                                         **grantee).first()
        if grant is None:
            try:
                with transaction.atomic():
                    grant = Grant.objects.create(role=role, created_by=actor, expires_at=expires_at,
                                                 **subject.rows, **grantee)
            except IntegrityError:  # a concurrent grant to the same grantee won
                raise DomainError("This grantee was just granted access; list grants and retry.",
                                  code="grant_conflict") from None
            action = "grant.create"
        else:
            grant.role, grant.expires_at = role, expires_at
            grant.save(update_fields=["role", "expires_at"])
            action = "grant.change"
        subject.audit(actor=actor, action=action, target=_grant_target(grant),
                      detail={"grant": grant.pk, "role": role,
                              "expires_at": expires_at.isoformat() if expires_at else None})
        if action == "grant.create":
            subject.emit("share.created", {"kind": "grant", "id": grant.pk, "role": role,
                                           "grantee": _grant_target(grant)})
    return grant


def grant_create(*, actor, role: str, username: str | None = None, team_id=None, expires_at=None,
                 **subject) -> Grant:
    subject = _Subject.of(subject)
    if role not in GrantRole.values:
        raise DomainError(f"role must be one of {', '.join(GrantRole.values)}.", code="invalid_role",
                          field="role")
    if (username is None) == (team_id is None):
        raise DomainError("Give exactly one of username or team.", code="grantee_required", field="username")
    _check_expiry(expires_at)
    if username is not None:
        user = user_by_username(username)
        if user.pk == subject.owner_id:
            raise DomainError("The owner already has full access.", code="already_owner", field="username")
        return _grant_upsert(subject=subject, actor=actor, role=role, user=user, expires_at=expires_at)
    # Only a team the granter belongs to: any other id is "not found", so a grant
    # can neither reach a stranger's team nor tell its name.
    number = parse_uint(team_id)
    team = Team.objects.filter(pk=number, members=actor).first() if number is not None else None
    if team is None:
        raise DomainError("Team not found.", code="team_not_found", field="team")
    return _grant_upsert(subject=subject, actor=actor, role=role, team=team, expires_at=expires_at)


def grant_revoke(*, grant_id, actor, **subject) -> Grant:
    subject = _Subject.of(subject)
    with transaction.atomic():
        grant = (Grant.objects.select_for_update(of=("self",)).select_related("user")
                 .filter(pk=grant_id, **subject.rows).first())
        if grant is None:
            raise DomainError("Grant not found.", code="grant_not_found")
        if grant.revoked_at is None:
            grant.revoked_at = timezone.now()
            grant.save(update_fields=["revoked_at"])
            subject.audit(actor=actor, action="grant.revoke", target=_grant_target(grant),
                          detail={"grant": grant.pk, "role": grant.role})
            subject.emit("share.revoked", {"kind": "grant", "id": grant.pk, "role": grant.role,
                                           "grantee": _grant_target(grant)})
    return grant
