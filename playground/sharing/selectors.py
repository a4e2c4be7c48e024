"""Reads for sharing: links, grants, the audit trail."""

from __future__ import annotations

from django.db.models import QuerySet

from playground.models import Prompt

from .models import AuditEvent, Grant, ShareLink
from .tokens import links_audit_expired


def link_list(*, prompt: Prompt) -> QuerySet[ShareLink]:
    # Listing is a natural moment to notice (and audit) expiries nobody presented.
    links_audit_expired(prompt_id=prompt.pk)
    return ShareLink.objects.filter(prompt=prompt).select_related("created_by")


def grant_list(*, prompt: Prompt) -> QuerySet[Grant]:
    return Grant.objects.filter(prompt=prompt).select_related("user", "team", "created_by")


def audit_list(*, prompt: Prompt) -> QuerySet[AuditEvent]:
    links_audit_expired(prompt_id=prompt.pk)
    return AuditEvent.objects.filter(prompt_id=prompt.pk)
