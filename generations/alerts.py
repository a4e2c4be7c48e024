"""What an editor does with a regression alert (generations.regression): move
the label back to the previous version, or dismiss the alert. A move back goes
through the label's own move service and checks (protection, approval, an
evaluation gate), so it is refused as any move would be, with that code."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Case, IntegerField, QuerySet, Value, When
from django.utils import timezone

from core.error_codes import DomainError
from playground.models import Prompt
from playground.move_checks import label_move_check
from playground.services import label_move
from sharing.audit import audit_record

from .models import AlertStatus, RegressionAlert
from .regression import alert_payload


def alert_list(*, prompt: Prompt, status: str = "") -> QuerySet[RegressionAlert]:
    """The prompt's alerts, open ones first (`is_open`, for the cursor), then newest first."""
    rows = RegressionAlert.objects.filter(prompt=prompt)
    if status:
        rows = rows.filter(status=status)
    return (rows.select_related("version", "previous_version", "resolved_by")
            .annotate(is_open=Case(When(status=AlertStatus.OPEN, then=Value(1)), default=Value(0),
                                   output_field=IntegerField())))


def _locked_open(*, prompt: Prompt, alert_id) -> RegressionAlert:
    try:
        pk = int(alert_id)
    except (TypeError, ValueError):
        pk = None
    alert = (RegressionAlert.objects.select_for_update().filter(pk=pk, prompt=prompt).first()
             if pk is not None and 0 < pk < 2 ** 63 else None)
    if alert is None:
        raise DomainError("No such alert on this prompt.", code="alert_not_found")
    if alert.status != AlertStatus.OPEN:
        raise DomainError(f"The alert is already {alert.get_status_display().lower()}.",
                          code="alert_resolved", extra={"status": alert.status})
    return alert


def _resolve(alert: RegressionAlert, *, status: str, actor) -> RegressionAlert:
    alert.status, alert.resolved_at, alert.resolved_by = status, timezone.now(), actor
    alert.save(update_fields=["status", "resolved_at", "resolved_by"])
    return alert


def alert_rollback(*, prompt: Prompt, alert_id, actor) -> RegressionAlert:
    """Move the alert's label back to its previous version (compare-and-set from
    the version the alert is about: 409 label_conflict if it moved since) and
    close every open alert of that label and version as rolled back."""
    with transaction.atomic():
        alert = _locked_open(prompt=prompt, alert_id=alert_id)
        label_move_check(prompt=prompt, name=alert.label, user=actor, candidate_id=alert.previous_version_id,
                         baseline_id=alert.version_id, run_id=None)
        label_move(prompt=prompt, name=alert.label, version_id=alert.previous_version_id,
                   expected_version_id=alert.version_id, actor=actor)
        siblings = (RegressionAlert.objects.select_for_update()
                    .filter(prompt=prompt, label=alert.label, version_id=alert.version_id,
                            status=AlertStatus.OPEN).exclude(pk=alert.pk))
        for other in siblings:
            _resolve(other, status=AlertStatus.ROLLED_BACK, actor=actor)
        _resolve(alert, status=AlertStatus.ROLLED_BACK, actor=actor)
        audit_record(prompt_id=prompt.pk, actor=actor, action="regression.rolled_back",
                     target=f"label:{alert.label}", detail=alert_payload(alert))
    return alert


def alert_dismiss(*, prompt: Prompt, alert_id, actor) -> RegressionAlert:
    """Close the alert, leaving the label where it is."""
    with transaction.atomic():
        alert = _resolve(_locked_open(prompt=prompt, alert_id=alert_id), status=AlertStatus.DISMISSED,
                         actor=actor)
        audit_record(prompt_id=prompt.pk, actor=actor, action="regression.dismissed",
                     target=f"label:{alert.label}", detail=alert_payload(alert))
    return alert
