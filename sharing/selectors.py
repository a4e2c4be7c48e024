"""Reads for sharing: links, grants, the audit trail."""

from __future__ import annotations

from django.db.models import QuerySet

from playground.models import Prompt

from .models import AuditEvent, Grant, ShareLink
from .tokens import links_audit_expired


def link_list(*, prompt: Prompt | None = None, dataset=None) -> QuerySet[ShareLink]:
    """The links of a prompt, or of a dataset."""
    subject = {"prompt": prompt} if prompt is not None else {"dataset": dataset}
    # Listing is a natural moment to notice (and audit) expiries nobody presented.
    links_audit_expired(**subject)
    return ShareLink.objects.filter(**subject).select_related("created_by")


def grant_list(*, prompt: Prompt | None = None, dataset=None) -> QuerySet[Grant]:
    subject = {"prompt": prompt} if prompt is not None else {"dataset": dataset}
    return Grant.objects.filter(**subject).select_related("user", "team", "created_by")


def audit_list(*, prompt: Prompt) -> QuerySet[AuditEvent]:
    links_audit_expired(prompt=prompt)
    return AuditEvent.objects.filter(prompt_id=prompt.pk)
