"""The regression alarm: after a label moves, the new version's generations
through the label since the move are compared with the previous version's over
as long before it; a check that finds the new version significantly worse
raises an alert (RegressionAlert, an audit entry, the webhook event
`version.regressed`). generations.alerts moves the label back or dismisses it.

The checks are data (CHECKS, and one `score:<name>` check per evaluator whose
online evaluation (evals.online) scored for both versions): which samples each reads,
the figure it shows, its one-sided test (generations.stats) and the smallest
change worth an alert. A check fires when both sides hold at least
REGRESSION_MIN_SAMPLES samples, the change is at least that smallest one and
p < REGRESSION_ALPHA; once per move (a dismissed alert stays dismissed).

Run by the beat entry `generations-regression-check` (generations.tasks) or,
in the embedded default, a thread of the serving process (generations.apps).
"""

from __future__ import annotations

import datetime
import logging
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from evals.online import version_score_samples
from playground.models import Label, LabelMove
from sharing.audit import audit_record
from webhooks.services import webhook_emit

from .models import AlertStatus, Generation, RegressionAlert
from .stats import mann_whitney_u, quantile, two_proportion_z

log = logging.getLogger(__name__)


def _rate_p(new: list[float], old: list[float]) -> float:
    return two_proportion_z(int(sum(new)), len(new), int(sum(old)), len(old))[1]


def _rise_p(new: list[float], old: list[float]) -> float:
    return mann_whitney_u(new, old)[1]


def _drop_p(new: list[float], old: list[float]) -> float:
    return mann_whitney_u(old, new)[1]


def _rose(new: float, old: float) -> bool:
    return new >= old * (1 + settings.REGRESSION_MIN_RISE) and new > old


def _dropped(new: float, old: float) -> bool:
    return old - new >= abs(old) * settings.REGRESSION_MIN_SCORE_DROP and new < old


@dataclass(frozen=True)
class Check:
    name: str  # the alert's `check`
    samples: str  # the key of Sides.samples it reads
    figure: Callable[[list[float]], float]  # what the alert shows of each side
    p_value: Callable[[list[float], list[float]], float]  # one-sided: the new side is worse
    worse: Callable[[float, float], bool]  # (new figure, previous figure): a change worth an alert


CHECKS = (
    # Any status but ok is an error, as the version page counts it.
    Check("error_rate", "errors", statistics.fmean, _rate_p, lambda new, old: new > old),
    # Latency and TTFT of the generations that succeeded.
    Check("latency_p95", "latency", lambda v: quantile(v, 0.95), _rise_p, _rose),
    Check("ttft_p50", "ttft", lambda v: quantile(v, 0.5), _rise_p, _rose),
)


def score_check(name: str) -> Check:
    return Check(f"score:{name}", f"score:{name}", statistics.fmean, _drop_p, _dropped)


@dataclass(frozen=True)
class Finding:
    check: str
    value: float
    previous_value: float
    count: int
    previous_count: int
    p_value: float


def _samples(*, version_id, label: str, since, until) -> dict[str, list[float]]:
    rows = (Generation.objects.filter(version_id=version_id, label=label, created_at__gte=since,
                                      created_at__lt=until)
            .order_by().values_list("status", "latency_ms", "ttft_ms"))
    out: dict[str, list[float]] = {"errors": [], "latency": [], "ttft": []}
    for status, latency, ttft in rows.iterator(chunk_size=5000):
        out["errors"].append(0.0 if status == "ok" else 1.0)
        if status == "ok":
            out["latency"].append(float(latency))
            if ttft is not None:
                out["ttft"].append(float(ttft))
    for name, scores in version_score_samples(version_id=version_id, since=since, until=until).items():
        out[f"score:{name}"] = [float(s) for s in scores]
    return out


def compare(new: dict[str, list[float]], old: dict[str, list[float]]) -> list[Finding]:
    """The checks that fire on these samples (new version, previous version)."""
    scores = sorted(k.removeprefix("score:") for k in new.keys() & old.keys() if k.startswith("score:"))
    findings = []
    for check in (*CHECKS, *map(score_check, scores)):
        a, b = new.get(check.samples, []), old.get(check.samples, [])
        if min(len(a), len(b)) < settings.REGRESSION_MIN_SAMPLES:
            continue  # thin data: no verdict
        value, previous = check.figure(a), check.figure(b)
        if not check.worse(value, previous):
            continue
        p = check.p_value(a, b)
        if p < settings.REGRESSION_ALPHA:
            findings.append(Finding(check.name, value, previous, len(a), len(b), p))
    return findings


def moves_to_check(now: datetime.datetime) -> list[LabelMove]:
    """The last move of each label moved within the window that still holds the
    version it moved to, alone (a split label is compared by its arms, not here)."""
    since = now - datetime.timedelta(seconds=settings.REGRESSION_WINDOW_S)
    moves = (LabelMove.objects.filter(created_at__gte=since, created_at__lt=now, from_version__isnull=False)
             .select_related("label", "label__prompt").order_by("-id"))
    last: dict[int, LabelMove] = {}
    for move in moves:
        last.setdefault(move.label_id, move)
    return [m for m in last.values() if m.label.version_id == m.to_version_id and not m.label.split
            and m.from_version_id != m.to_version_id]


def move_findings(move: LabelMove, now: datetime.datetime) -> list[Finding]:
    """The checks that fire on `move` as of `now`: since the move against as long before it."""
    elapsed = now - move.created_at
    label = move.label.name
    new = _samples(version_id=move.to_version_id, label=label, since=move.created_at, until=now)
    old = _samples(version_id=move.from_version_id, label=label, since=move.created_at - elapsed,
                   until=move.created_at)
    return compare(new, old)


def alert_payload(alert: RegressionAlert) -> dict:
    """The alert as the API, the audit log and the webhook show it."""
    previous = alert.previous_version
    return {"id": alert.pk, "label": alert.label, "check": alert.rule, "status": alert.status,
            "version": {"id": str(alert.version_id), "number": alert.version.number},
            "previous_version": {"id": str(previous.pk), "number": previous.number},
            "value": alert.value, "previous_value": alert.previous_value, "count": alert.count,
            "previous_count": alert.previous_count, "p_value": alert.p_value,
            "moved_at": alert.moved_at.isoformat(), "created_at": alert.created_at.isoformat(),
            "resolved_at": alert.resolved_at.isoformat() if alert.resolved_at else None,
            "resolved_by": alert.resolved_by.get_username() if alert.resolved_by else None}


def _raise(move: LabelMove, finding: Finding) -> RegressionAlert | None:
    label: Label = move.label
    fired = RegressionAlert.objects.filter(move_id=move.pk, rule=finding.check)
    already_open = RegressionAlert.objects.filter(prompt_id=label.prompt_id, label=label.name,
                                                  version_id=move.to_version_id, rule=finding.check,
                                                  status=AlertStatus.OPEN)
    if fired.exists() or already_open.exists():
        return None
    try:
        with transaction.atomic():
            alert = RegressionAlert.objects.create(
                prompt_id=label.prompt_id, label=label.name, version_id=move.to_version_id,
                previous_version_id=move.from_version_id, move_id=move.pk, moved_at=move.created_at,
                rule=finding.check, value=finding.value, previous_value=finding.previous_value,
                count=finding.count, previous_count=finding.previous_count, p_value=finding.p_value)
            payload = alert_payload(alert)
            audit_record(prompt_id=label.prompt_id, actor=None, action="version.regressed",
                         target=f"label:{label.name}", detail=payload)
            webhook_emit(prompt=label.prompt, event="version.regressed", data=payload)
    except IntegrityError:  # another checker raised it first
        return None
    return alert


def regression_check(now: datetime.datetime | None = None) -> list[RegressionAlert]:
    """Check every label moved within the window; the alerts raised."""
    now = now or timezone.now()
    raised = []
    for move in moves_to_check(now):
        for finding in move_findings(move, now):
            alert = _raise(move, finding)
            if alert is not None:
                log.warning("regression: %s of %s on label %s (alert %s)", finding.check,
                            move.to_version_id, move.label.name, alert.pk)
                raised.append(alert)
    return raised
