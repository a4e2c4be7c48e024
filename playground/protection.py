"""Protected labels: only editors move them, only the owner removes them or
changes their protection, and (require_approval) a move is a request that a
second editor approves or rejects; any label's move may be such a review
request by choice. Every request and decision is audited; an approved move is
an ordinary compare-and-set move from where the request found the label, so a
label moved meanwhile makes the approval a 409. What a protected label refuses
to a direct change is label_locks.py's (services checks it)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from core.error_codes import DomainError
from sharing.audit import audit_record

from .models import Label, PendingLabelMove, PendingStatus, Prompt, PromptVersion
from .services import label_move, locked_label


def label_protect(*, prompt: Prompt, name: str, protected: bool, require_approval: bool, actor) -> Label:
    if not isinstance(protected, bool) or not isinstance(require_approval, bool):
        raise DomainError("protected and require_approval are booleans.", code="invalid_type",
                          field="protected")
    if require_approval and not protected:
        raise DomainError("require_approval needs protected.", code="invalid_request",
                          field="require_approval")
    with transaction.atomic():
        label = locked_label(prompt, name)
        label.protected, label.require_approval = protected, require_approval
        label.save(update_fields=["protected", "require_approval", "updated_at"])
        audit_record(prompt_id=prompt.pk, actor=actor, action="label.protect", target=f"label:{name}",
                     detail={"protected": protected, "require_approval": require_approval})
    return label


def label_move_request(*, prompt: Prompt, name: str, version_id, expected_version_id, actor,
                       eval_run: str = "", note: str = "") -> PendingLabelMove:
    """A pending move (a review request; every move of a label that requires
    approval is one), checked like a move now: the version must be this
    prompt's and the label must hold `expected`."""
    if not isinstance(note, str) or len(note) > 500:
        raise DomainError("note is a string of at most 500 characters.", code="invalid_request", field="note")
    target = PromptVersion.objects.filter(pk=version_id, prompt=prompt).first()
    if target is None:
        raise DomainError("The version is not a version of this prompt.", code="version_not_found",
                          field="version")
    with transaction.atomic():
        label = locked_label(prompt, name)
        if str(label.version_id) != str(expected_version_id):
            raise DomainError(f"Label {name!r} does not hold the expected version.", code="label_conflict",
                              field="expected",
                              extra={"current_version": str(label.version_id)})
        pending = PendingLabelMove.objects.create(label=label, from_version_id=label.version_id,
                                                  to_version=target, requested_by=actor,
                                                  eval_run=eval_run or "", note=note)
        audit_record(prompt_id=prompt.pk, actor=actor, action="label.move_requested", target=f"label:{name}",
                     detail={"pending": pending.pk, "from_version": str(label.version_id),
                             "to_version": str(target.pk), "note": note})
    return pending


def pending_list(*, prompt: Prompt, name: str | None = None, status: str | None = None):
    rows = PendingLabelMove.objects.filter(label__prompt=prompt).select_related("label", "requested_by",
                                                                                 "decided_by")
    if status is not None:
        if status not in PendingStatus.values:
            raise DomainError(f"status is one of {', '.join(PendingStatus.values)}.", code="invalid_request",
                              field="status")
        rows = rows.filter(status=status)
    return rows.filter(label__name=name) if name else rows


def pending_decide(*, prompt: Prompt, name: str, pending_id, actor, approve: bool, reason: str = "",
                   gate=None, eval_run: str | None = None) -> PendingLabelMove:
    """Approve (the move happens, compare-and-set from where the request found the
    label) or reject a pending move. The requester cannot decide their own request.
    `gate(pending)` runs the evaluation gate before an approval, on `eval_run`
    (the approver's pick) or else the run the request named."""
    if not isinstance(reason, str) or len(reason) > 500:
        raise DomainError("reason is a string of at most 500 characters.", code="invalid_request",
                          field="reason")
    pending = pending_list(prompt=prompt, name=name).filter(pk=pending_id).first()
    if pending is None:
        raise DomainError("Pending move not found.", code="pending_not_found")
    if pending.status != PendingStatus.PENDING:
        raise DomainError(f"This move was already {pending.status}.", code="already_decided")
    if pending.requested_by_id == getattr(actor, "pk", None):
        raise DomainError("A second editor must decide: you requested this move.",
                          code="second_editor_required")
    if approve and eval_run:
        pending.eval_run = str(eval_run)
    if approve and gate is not None:
        gate(pending)
    conflict = None
    with transaction.atomic():
        locked = PendingLabelMove.objects.select_for_update().get(pk=pending.pk)
        if locked.status != PendingStatus.PENDING:
            raise DomainError(f"This move was already {locked.status}.", code="already_decided")
        status = PendingStatus.APPROVED if approve else PendingStatus.REJECTED
        if approve:
            try:
                with transaction.atomic():
                    label_move(prompt=prompt, name=name, version_id=locked.to_version_id,
                               expected_version_id=locked.from_version_id, actor=actor, approved=True)
            except DomainError as exc:
                if exc.code != "label_conflict":
                    raise
                # Recorded as rejected (committed), then the 409 says why.
                status, reason, conflict = PendingStatus.REJECTED, "the label moved since the request", exc
        locked.status, locked.reason, locked.eval_run = status, reason, pending.eval_run
        locked.decided_by, locked.decided_at = actor, timezone.now()
        locked.save(update_fields=["status", "decided_by", "decided_at", "reason", "eval_run"])
        requester = pending.requested_by.username if pending.requested_by_id else None
        audit_record(prompt_id=prompt.pk, actor=actor, action=f"label.move_{status}", target=f"label:{name}",
                     detail={"pending": locked.pk, "requested_by": requester,
                             "from_version": str(locked.from_version_id),
                             "to_version": str(locked.to_version_id), "reason": reason,
                             "eval_run": locked.eval_run or None})
    if conflict is not None:
        raise conflict
    return locked
