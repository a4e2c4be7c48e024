"""Canary rollouts: a closed loop that publishes traffic steps as config
documents, watches the canary against the stable version, and promotes or rolls
back, auditing every decision with the figures that made it.

    rollout = rollout_start(model="m", version="v2", steps=[10, 50, 100], actor="ops")
    rollout_run(rollout)        # manage.py deploy runs this in the foreground

1. Wait for readiness: until a worker heartbeats ``m@v2`` (it fetched, verified
   and loaded the checkpoint), up to the document's rollout.ready_timeout_s; the
   rollout shows state waiting_for_ready meanwhile, and fails (no traffic moved)
   on the timeout.
2. Each step S publishes a document with weights {stable: 100 - S, canary: S}
   (the canary's other options in its entry are kept). Before the last step, it
   watches one window (rollout.window_s) of the usage records of both versions;
   a window with fewer than rollout.min_requests canary requests is extended, at
   most twice, then judged on what it has.
3. ``decide``: roll back when the canary's error rate exceeds the stable one's by
   more than rollout.max_error_rate_delta, or its p99 latency exceeds the stable
   p99 times rollout.max_p99_ratio, or it served nothing at all; else go on. The
   last step (100) promotes. Rollback republishes the content of the document the
   rollout started from (N-1) as the next number.

Operators (the admin action, or manage.py deploy --pause/--resume/--promote/
--rollback) set ``requested``; the loop acts on it within half a second.
"""

from __future__ import annotations

import dataclasses
import logging
import time

from django.db import IntegrityError, transaction
from django.utils import timezone

from inference_client.control import documents
from inference_client.models import ControlEvent, ModelVersion, Rollout, UsageRecord
from inference_protocol import config
from inference_protocol.backend import live_workers
from inference_protocol.catalog import served_name

logger = logging.getLogger("inference.rollout")
TICK_S = 0.5


class RolloutError(Exception):
    """Refused before anything started, with a message naming the cause."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


@dataclasses.dataclass(frozen=True)
class Figures:
    requests: int
    errors: int
    p99_ms: float

    @property
    def error_rate(self) -> float:
        return self.errors / self.requests if self.requests else 0.0

    def as_dict(self) -> dict:
        return {"requests": self.requests, "errors": self.errors,
                "error_rate": round(self.error_rate, 4), "p99_ms": self.p99_ms}


def window_figures(*, model: str, version: str, since) -> Figures:
    rows = list(UsageRecord.objects.filter(model=model, version=version, created_at__gte=since)
                .exclude(status=UsageRecord.Status.CANCELLED).values_list("status", "latency_ms"))
    latencies = sorted(ms for _, ms in rows)
    p99 = float(latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]) if latencies else 0.0
    return Figures(len(rows), sum(1 for status, _ in rows if status == UsageRecord.Status.ERROR), p99)


def decide(canary: Figures, stable: Figures, thresholds: dict) -> tuple[str, str]:
    """("continue" | "rollback", why), from one window's figures."""
    if canary.requests == 0:
        return "rollback", "the canary served no request in the window"
    delta = canary.error_rate - stable.error_rate
    if delta > thresholds["max_error_rate_delta"]:
        return "rollback", (f"canary error rate {canary.error_rate:.1%} vs stable {stable.error_rate:.1%}: "
                            f"+{delta:.1%} > {thresholds['max_error_rate_delta']:.1%}")
    if stable.p99_ms > 0 and canary.p99_ms > stable.p99_ms * thresholds["max_p99_ratio"]:
        return "rollback", (f"canary p99 {canary.p99_ms:.0f} ms vs stable {stable.p99_ms:.0f} ms: "
                            f"x{canary.p99_ms / stable.p99_ms:.2f} > x{thresholds['max_p99_ratio']}")
    return "continue", (f"canary error rate {canary.error_rate:.1%} vs stable {stable.error_rate:.1%}, "
                        f"p99 {canary.p99_ms:.0f} vs {stable.p99_ms:.0f} ms: within thresholds")


def _audit(rollout: Rollout, action: str, reason: str, **detail) -> None:
    target = f"rollout:{rollout.pk}:{rollout.model}@{rollout.version}"
    ControlEvent.objects.create(action=action, target=target, actor_name=rollout.created_by,
                                detail={"reason": reason, **detail})
    logger.info("rollout %s %s@%s: %s (%s)", rollout.pk, rollout.model, rollout.version, action, reason)


def check_steps(steps: list[int]) -> list[int]:
    if (not steps or any(not isinstance(s, int) or not 0 < s <= 100 for s in steps)
            or steps != sorted(set(steps)) or steps[-1] != 100):
        raise RolloutError("invalid_steps", f"steps {steps}: give increasing percentages in 1..100 "
                                            "ending at 100, e.g. 10,50,100")
    return steps


def rollout_start(*, model: str, version: str, steps: list[int], actor: str) -> Rollout:
    """Check and record a rollout (RolloutError naming the cause; ``conflict``
    when one of the same model is active)."""
    check_steps(steps)
    latest = documents.latest_document()
    content = documents.current_content()
    spec = content["models"].get(model)
    if spec is None:
        raise RolloutError("model_not_found", f"model {model!r} is not in the current config document")
    if not ModelVersion.objects.filter(model=model, version=version).exists():
        raise RolloutError("version_not_published", f"{model}@{version} was never published (model_publish)")
    weights = {v: config.version_weight(e) for v, e in (spec.get("versions") or {}).items()}
    others = [v for v in weights if v != version and weights[v] > 0]
    stable = max(others, key=lambda v: weights[v], default=None)
    if stable is None:
        raise RolloutError("no_stable_version", f"the current document serves no other version of {model}: "
                                                "publish its versions first (e.g. versions {\"v1\": 100})")
    try:
        with transaction.atomic():
            rollout = Rollout.objects.create(model=model, version=version, stable_version=stable, steps=steps,
                                             base_document=latest.number if latest else 0, created_by=actor)
            _audit(rollout, "rollout_start", f"{model}@{version} over {stable} in steps {steps}",
                   steps=steps, stable=stable)
    except IntegrityError:
        active = Rollout.objects.filter(model=model, state__in=Rollout.ACTIVE).first()
        who = (f" (rollout {active.pk} of {active.version} by {active.created_by}, {active.state})"
               if active else "")
        raise RolloutError("conflict", f"a rollout of {model} is already in progress{who}") from None
    return rollout


def rollout_request(*, rollout_id: int, action: str, actor: str) -> Rollout:
    """An operator's pause / resume / promote / rollback, picked up by the loop."""
    if action not in ("pause", "resume", "promote", "rollback"):
        raise RolloutError("invalid_action", f"unknown action {action!r}")
    with transaction.atomic():
        rollout = Rollout.objects.select_for_update().get(pk=rollout_id)
        if rollout.state not in Rollout.ACTIVE:
            raise RolloutError("not_active", f"rollout {rollout_id} is {rollout.state}")
        rollout.requested = action
        rollout.save(update_fields=["requested", "updated_at"])
        ControlEvent.objects.create(action=f"rollout_{action}_requested", target=f"rollout:{rollout.pk}",
                                    actor_name=actor, detail={})
    return rollout


def _set(rollout: Rollout, **fields) -> None:
    for name, value in fields.items():
        setattr(rollout, name, value)
    rollout.save(update_fields=[*fields, "updated_at"])


def _step_content(rollout: Rollout, percent: int) -> dict:
    content = documents.current_content()
    spec = content["models"][rollout.model]
    versions = dict(spec.get("versions") or {})
    for version, weight in ((rollout.version, percent), (rollout.stable_version, 100 - percent)):
        entry = versions.get(version)
        versions[version] = {**entry, "weight": weight} if isinstance(entry, dict) else weight
    for version in list(versions):  # any third version gives its share up
        if version not in (rollout.version, rollout.stable_version):
            entry = versions[version]
            versions[version] = {**entry, "weight": 0} if isinstance(entry, dict) else 0
    spec["versions"] = versions
    return content


def ready_workers(model: str, version: str) -> list[dict]:
    return [r for r in live_workers(served_name(model, version)) if r.get("healthy", True)]


def rollout_run(rollout: Rollout, *, progress=lambda message: None) -> Rollout:
    """Drive the rollout to promoted, rolled_back or failed (module docstring)."""
    thresholds = config.ConfigSnapshot.of(0, None, documents.current_content()).rollout
    deadline = time.monotonic() + thresholds["ready_timeout_s"]
    progress(f"waiting for a worker ready with {rollout.model}@{rollout.version}")
    while not ready_workers(rollout.model, rollout.version):
        rollout.refresh_from_db()
        if rollout.requested == "rollback" or time.monotonic() > deadline:
            why = ("rollback requested" if rollout.requested == "rollback" else
                   f"no worker was ready with {rollout.model}@{rollout.version} within "
                   f"{thresholds['ready_timeout_s']:.0f}s: no traffic moved")
            _set(rollout, state=Rollout.State.FAILED, reason=why, requested="")
            _audit(rollout, "rollout_failed", why)
            return rollout
        time.sleep(TICK_S)
    _set(rollout, state=Rollout.State.RUNNING)
    for index, percent in enumerate(rollout.steps):
        record = documents.config_publish(
            content=_step_content(rollout, percent), actor=rollout.created_by, action="rollout_step",
            reason=f"rollout {rollout.pk}: {rollout.model}@{rollout.version} at {percent}%",
            detail={"rollout": rollout.pk, "percent": percent})
        _set(rollout, step_index=index)
        _audit(rollout, "rollout_step", f"{percent}% to {rollout.version}", percent=percent,
               document=record.number)
        progress(f"step {index + 1}/{len(rollout.steps)}: {percent}% (document {record.number})")
        if percent == 100:
            break
        outcome = _watch(rollout, thresholds, progress)
        if outcome is not None:
            return outcome
    why = f"{rollout.model}@{rollout.version} serves 100% after clean windows"
    _set(rollout, state=Rollout.State.PROMOTED, reason=why, requested="")
    _audit(rollout, "rollout_promoted", why, figures=rollout.figures)
    progress("promoted")
    return rollout


def _watch(rollout: Rollout, thresholds: dict, progress) -> Rollout | None:
    """One step's window(s); the rollout when it ended here (rolled back), else None."""
    since, extensions = timezone.now(), 0
    window_end = time.monotonic() + thresholds["window_s"]
    while True:
        time.sleep(TICK_S)
        rollout.refresh_from_db()
        if rollout.requested == "rollback":
            return _roll_back(rollout, "rollback requested by an operator", {})
        if rollout.requested == "promote":
            _set(rollout, requested="")
            _audit(rollout, "rollout_promote_step", "promoted by an operator")
            return None
        if rollout.requested == "pause" and rollout.state != Rollout.State.PAUSED:
            _set(rollout, state=Rollout.State.PAUSED)
            _audit(rollout, "rollout_paused", "paused by an operator")
        if rollout.requested == "resume" and rollout.state == Rollout.State.PAUSED:
            _set(rollout, state=Rollout.State.RUNNING, requested="")
            _audit(rollout, "rollout_resumed", "resumed by an operator")
            window_end = time.monotonic() + thresholds["window_s"]
        if rollout.state == Rollout.State.PAUSED or time.monotonic() < window_end:
            continue
        canary = window_figures(model=rollout.model, version=rollout.version, since=since)
        stable = window_figures(model=rollout.model, version=rollout.stable_version, since=since)
        figures = {"canary": canary.as_dict(), "stable": stable.as_dict(), "window_s": thresholds["window_s"],
                   "extensions": extensions, "thresholds": {k: thresholds[k] for k in (
                       "max_error_rate_delta", "max_p99_ratio", "min_requests")}}
        _set(rollout, figures=figures)
        if canary.requests < thresholds["min_requests"] and extensions < 2:
            extensions += 1
            window_end = time.monotonic() + thresholds["window_s"]
            progress(f"window extended: {canary.requests} canary requests < {thresholds['min_requests']}")
            continue
        verdict, why = decide(canary, stable, thresholds)
        progress(f"window: {why}")
        if verdict == "rollback":
            return _roll_back(rollout, why, figures)
        _audit(rollout, "rollout_window_clean", why, figures=figures)
        return None


def _roll_back(rollout: Rollout, why: str, figures: dict) -> Rollout:
    record = documents.config_publish(
        content=documents.document_content(rollout.base_document), actor=rollout.created_by,
        action="config_rollback", reason=f"rollout {rollout.pk} rolled back: {why}",
        detail={"rollout": rollout.pk, "content_of": rollout.base_document})
    _set(rollout, state=Rollout.State.ROLLED_BACK, reason=why, requested="")
    _audit(rollout, "rollout_rolled_back", why, figures=figures, document=record.number,
           content_of=rollout.base_document)
    return rollout
