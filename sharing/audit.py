"""The audit log: one function that writes an event (with the request id
of core.middleware). Callers write events inside the same transaction as the change they
record, so a rolled-back change leaves no event and a committed one always has one."""

from __future__ import annotations

from core.middleware import current_request_id
from sharing.models import AuditEvent


def audit_record(*, prompt_id=None, dataset_id=None, actor, action: str, target: str,
                 detail: dict | None = None) -> AuditEvent:
    """About a prompt (``prompt_id``) or a dataset (``dataset_id``)."""
    signed_in = actor is not None and getattr(actor, "is_authenticated", False)
    return AuditEvent.objects.create(
        prompt_id=prompt_id, dataset_id=dataset_id, actor=actor if signed_in else None,
        actor_name=actor.get_username() if signed_in else "", action=action, target=target,
        detail=detail or {}, request_id=current_request_id(),
    )
