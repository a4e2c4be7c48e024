"""A prompt's ownership: transfer offers, their answers, the transfer itself,
and forks (a copy of one version as a new prompt). Each change and its audit
event commit together. Callers have already passed access_prompt (need="own"
for a transfer, "fork" for a fork)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from core.error_codes import DomainError
from core.ids import parse_uint
from sharing.audit import audit_record
from sharing.models import Grant, GrantRole, TransferOffer
from sharing.services import grant_upsert, user_by_username

from .bodies import body_text
from .models import Prompt
from .selectors import version_get
from .services import version_create


def transfer_offer(*, prompt: Prompt, actor, username: str, keep_access: bool = True) -> TransferOffer:
    """The owner offers the prompt to `username`; nothing changes until they accept."""
    to_user = user_by_username(username)
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
    new_owner = user_by_username(username)
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
            grant_upsert(prompt=prompt, actor=actor, role=GrantRole.EDITOR, user=previous)
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
            seed=version.seed, stop=version.stop, system=version.system, messages=version.messages,
            variables=version.variables, response_schema=version.response_schema, tools=version.tools,
            tool_choice=version.tool_choice,
            message=f"Forked from {source.title!r} v{version.number}",
        )
        audit_record(prompt_id=source.pk, actor=owner, action="prompt.fork", target=f"prompt:{fork.pk}",
                     detail={"version": str(version.pk)})
    fork.refresh_from_db()
    return fork
