"""Reads for sharing: links, grants, the audit trail of any kind of object,
named by its kind's keyword (`prompt=`, `dataset=`)."""

from __future__ import annotations

from django.db.models import QuerySet

from .kinds import subject_of
from .models import AuditEvent, Grant, ShareLink
from .tokens import links_audit_expired


def link_list(**subject) -> QuerySet[ShareLink]:
    kind, obj = subject_of(subject)
    # Listing is a natural moment to notice (and audit) expiries nobody presented.
    links_audit_expired(**{kind.name: obj})
    return ShareLink.objects.filter(**{kind.name: obj}).select_related("created_by")


def grant_list(**subject) -> QuerySet[Grant]:
    kind, obj = subject_of(subject)
    return Grant.objects.filter(**{kind.name: obj}).select_related("user", "team", "created_by")


def audit_list(**subject) -> QuerySet[AuditEvent]:
    kind, obj = subject_of(subject)
    links_audit_expired(**{kind.name: obj})
    return AuditEvent.objects.filter(**{f"{kind.name}_id": obj.pk})
