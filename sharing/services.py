"""Writes for sharing: links, grants, ownership transfer, forks. Each change
and its audit event commit together. Callers have already passed
access_prompt (need="own" for everything but fork), or access_dataset
(need="own") for a dataset's links and grants: the same rows and rules serve
both (a dataset's changes are audited under its id and emit no prompt webhooks).
"""

from __future__ import annotations

import dataclasses

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Team
from core.error_codes import DomainError
from core.ids import parse_uint
from playground.audit import audit_record
from playground.bodies import body_text
from playground.models import Prompt, PromptVersion
from playground.selectors import version_get
from playground.services import version_create
from webhooks.services import webhook_emit

from .models import Grant, GrantRole, LinkMode, ShareLink, TransferOffer
from .tokens import token_generate, token_hash

User = get_user_model()


@dataclasses.dataclass(frozen=True)
class _Subject:
    """What a link or grant shares: a prompt, or a dataset."""

    prompt: Prompt | None = None
    dataset: object | None = None  # evals.models.Dataset

    def __post_init__(self):
        if (self.prompt is None) == (self.dataset is None):
            raise TypeError("share exactly one of a prompt or a dataset")

    @property
    def rows(self) -> dict:
        """The filter (and create) arguments of its links and grants."""
        return {"prompt": self.prompt} if self.prompt is not None else {"dataset": self.dataset}

    @property
    def owner_id(self):
        return (self.prompt or self.dataset).owner_id

    def audit(self, **fields) -> None:
        if self.prompt is not None:
            audit_record(prompt_id=self.prompt.pk, **fields)
        else:
            audit_record(dataset_id=self.dataset.pk, **fields)

    def emit(self, event: str, data: dict) -> None:
        if self.prompt is not None:  # webhooks are registered on prompts
            webhook_emit(prompt=self.prompt, event=event, data=data)


def _check_expiry(expires_at, field: str = "expires_at") -> None:
    if expires_at is not None and expires_at <= timezone.now():
        raise DomainError("The expiry must be in the future.", code="invalid_expiry", field=field)


def _user_by_username(username: str):
    user = User.objects.filter(username=username or "", is_active=True).first()
    if user is None:
        raise DomainError(f"No user named {username!r}.", code="user_not_found",
                          field="username")
    return user


def link_create(*, prompt: Prompt | None = None, dataset=None, actor, mode: str, name: str = "",
                version_id=None, expires_at=None, role: str | None = None) -> tuple[ShareLink, str]:
    """A new link and its token; the token is returned once and never stored."""
    subject = _Subject(prompt, dataset)
    if role is not None and role != GrantRole.VIEWER:
        raise DomainError("A link can only give view access; grant an account or team to let them edit.",
                          code="invalid_mode", field="role")
    if mode not in LinkMode.values:
        raise DomainError(f"mode must be one of {', '.join(LinkMode.values)}.", code="invalid_mode",
                          field="mode")
    if len(name) > 100:
        raise DomainError("The name is at most 100 characters.", code="invalid_request", field="name")
    version = None
    if version_id is not None:
        version = PromptVersion.objects.filter(prompt=prompt, pk=version_id).first() if prompt else None
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


def link_revoke(*, prompt: Prompt | None = None, dataset=None, link_id, actor) -> ShareLink:
    """Idempotent: revoking a revoked link changes nothing and audits nothing."""
    subject = _Subject(prompt, dataset)
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


def grant_create(*, prompt: Prompt | None = None, dataset=None, actor, role: str, username: str | None = None,
                 team_id=None, expires_at=None) -> Grant:
    subject = _Subject(prompt, dataset)
    if role not in GrantRole.values:
        raise DomainError(f"role must be one of {', '.join(GrantRole.values)}.", code="invalid_role",
                          field="role")
    if (username is None) == (team_id is None):
        raise DomainError("Give exactly one of username or team.", code="grantee_required", field="username")
    _check_expiry(expires_at)
    if username is not None:
        user = _user_by_username(username)
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


def grant_revoke(*, prompt: Prompt | None = None, dataset=None, grant_id, actor) -> Grant:
    subject = _Subject(prompt, dataset)
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


def transfer_offer(*, prompt: Prompt, actor, username: str, keep_access: bool = True) -> TransferOffer:
    """The owner offers the prompt to `username`; nothing changes until they accept."""
    to_user = _user_by_username(username)
    if to_user.pk == prompt.owner_id:
        raise DomainError("This user already owns the prompt.", code="already_owner", field="username")
    with transaction.atomic():
        offer, _ = TransferOffer.objects.update_or_create(
            prompt=prompt, to_user=to_user, defaults={"from_user": actor, "keep_access": keep_access})
        audit_record(prompt_id=prompt.pk, actor=actor, action="prompt.transfer_offer",
                     target=f"user:{to_user.username}", detail={"keep_access": keep_access})
    return offer


def transfer_answer(*, offer_id, user, accept: bool) -> Prompt | None:
    """The receiver accepts (becomes the owner) or declines; the offer is gone
    either way. An offer whose offerer no longer owns the prompt is void (404)."""
    with transaction.atomic():
        offer = (TransferOffer.objects.select_for_update().select_related("from_user")
                 .filter(pk=parse_uint(offer_id), to_user=user).first()) if parse_uint(offer_id) else None
        if offer is None:
            raise DomainError("No such transfer offer.", code="transfer_not_found")
        prompt = Prompt.objects.select_for_update().get(pk=offer.prompt_id)
        offer.delete()
        if prompt.owner_id != offer.from_user_id:
            raise DomainError("This offer is void: its sender no longer owns the prompt.",
                              code="transfer_not_found")
        if not accept:
            audit_record(prompt_id=prompt.pk, actor=user, action="prompt.transfer_decline",
                         target=f"user:{user.username}", detail={})
            return None
        TransferOffer.objects.filter(prompt=prompt).delete()  # other offers die with the ownership
        return prompt_transfer(prompt=prompt, actor=user, username=user.username,
                               keep_access=offer.keep_access)


def prompt_transfer(*, prompt: Prompt, actor, username: str, keep_access: bool = True) -> Prompt:
    """Make `username` the owner. The previous owner keeps an editor grant
    unless keep_access is false. `prompt` must be locked (for_update)."""
    new_owner = _user_by_username(username)
    if new_owner.pk == prompt.owner_id:
        raise DomainError("This user already owns the prompt.", code="already_owner", field="username")
    previous = prompt.owner
    with transaction.atomic():
        # An owner needs no grant; a stale one would outlive a later transfer away.
        now = timezone.now()
        Grant.objects.filter(prompt=prompt, user=new_owner, revoked_at__isnull=True).update(revoked_at=now)
        prompt.owner = new_owner
        prompt.save(update_fields=["owner", "updated_at"])
        audit_record(prompt_id=prompt.pk, actor=actor, action="prompt.transfer", target=f"user:{username}",
                     detail={"from": previous.username, "to": new_owner.username, "keep_access": keep_access})
        if keep_access:
            _grant_upsert(subject=_Subject(prompt), actor=actor, role=GrantRole.EDITOR, user=previous)
    return prompt


def prompt_fork(*, source: Prompt, version_id, owner, title: str = "") -> Prompt:
    """Copy one version into a new prompt owned by `owner`; the copy records
    the prompt and version it came from."""
    version = version_get(prompt=source, version_id=version_id)
    title = (title or f"{source.title} (fork)")[:200]
    with transaction.atomic():
        fork = Prompt.objects.create(owner=owner, title=title, description=source.description,
                                     forked_from_prompt=source, forked_from_version=version)
        version_create(
            prompt=fork, author=owner, body=body_text(version), model_name=version.model_name,
            temperature=version.temperature, max_tokens=version.max_tokens, top_p=version.top_p,
            stop=version.stop, system=version.system, variables=version.variables,
            response_schema=version.response_schema, tools=version.tools,
            message=f"Forked from {source.title!r} v{version.number}",
        )
        audit_record(prompt_id=source.pk, actor=owner, action="prompt.fork", target=f"prompt:{fork.pk}",
                     detail={"version": str(version.pk)})
    fork.refresh_from_db()
    return fork
