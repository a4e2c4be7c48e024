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

A lease (core.jobs, the driver of every background job) keeps a rollout from
outliving its driver. The driver (manage.py deploy, or the page's thread) holds
it (``Rollout.driver``) and renews it every tick, holding no database
connection while it waits between ticks; every write it makes (a step, a state, a rollback) is conditional on
still holding it, and a step's document, its step_index and its audit entry are
one transaction, so the recorded step is exactly what was published. When a
driver dies (or hangs past ROLLOUT_LEASE_S), the rollout is ``stale``: another
driver takes it over (``rollout_take_over``: deploy --resume, the page's Resume)
and goes on from the recorded step, watching that step's window afresh (the
figures before the take-over are not its own), or aborts it
(``rollout_abort``: rolls back what was published). A driver that comes back
after losing its lease stops at its next write (LeaseLost) without writing:
never two drivers stepping one rollout.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import time
import uuid

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.jobs import Job, JobKind, LeaseLost
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


def new_driver() -> str:
    """This process's name as a driver: host, pid, and a random part (a pid is reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


# A rollout is a job of core.jobs whose lease fields predate it: driver, lease_expires_at.
ROLLOUT_JOB = JobKind(name="rollout", model=Rollout, active=tuple(Rollout.ACTIVE),
                      lease_setting="ROLLOUT_LEASE_S", status_field="state", cancel_field="",
                      owner_field="driver", until_field="lease_expires_at")


class _Lease(Job):
    """The driver's hold on one rollout: renewals and writes, each conditional on it."""

    def __init__(self, rollout: Rollout):
        super().__init__(ROLLOUT_JOB, rollout.pk, owner=rollout.driver)
        self.rollout = rollout

    def renew(self) -> None:
        """Renew, and read what operators requested meanwhile."""
        if not self.heartbeat():
            raise LeaseLost(f"rollout {self.rollout.pk} is no longer driven by {self.owner}")
        self.rollout.refresh_from_db()

    def set(self, **fields) -> None:
        self.write(**fields, updated_at=timezone.now())
        for name, value in fields.items():
            setattr(self.rollout, name, value)


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


def rollout_start(*, model: str, version: str, steps: list[int], actor: str,
                  driver: str | None = None) -> Rollout:
    """Check and record a rollout, its lease held by ``driver`` (this process by
    default), which then runs it (RolloutError naming the cause; ``conflict``
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
                                             base_document=latest.number if latest else 0, created_by=actor,
                                             driver=driver or new_driver(),
                                             lease_expires_at=ROLLOUT_JOB.lease_end(timezone.now()))
            _audit(rollout, "rollout_start", f"{model}@{version} over {stable} in steps {steps}",
                   steps=steps, stable=stable)
    except IntegrityError:
        active = Rollout.objects.filter(model=model, state__in=Rollout.ACTIVE).first()
        who = (f" (rollout {active.pk} of {active.version} by {active.created_by}, {active.state})"
               if active else "")
        if active is not None and active.stale:
            who += (f"; its driver stopped ({_lease_words(active)}): "
                    f"deploy --model {model} --resume continues it, --rollback aborts it")
        raise RolloutError("conflict", f"a rollout of {model} is already in progress{who}") from None
    return rollout


def _lease_words(rollout: Rollout) -> str:
    if rollout.lease_expires_at is None:
        return "no driver holds it"
    return f"{rollout.driver or 'no driver'}'s lease lapsed at {rollout.lease_expires_at:%H:%M:%S} UTC"


def rollout_request(*, rollout_id: int, action: str, actor: str) -> Rollout:
    """An operator's pause / resume / promote / rollback, picked up by the loop
    (``stale``: no loop would pick it up; take it over or abort it instead)."""
    if action not in ("pause", "resume", "promote", "rollback"):
        raise RolloutError("invalid_action", f"unknown action {action!r}")
    with transaction.atomic():
        rollout = Rollout.objects.select_for_update().get(pk=rollout_id)
        if rollout.state not in Rollout.ACTIVE:
            raise RolloutError("not_active", f"rollout {rollout_id} is {rollout.state}")
        if rollout.stale:
            raise RolloutError("stale", f"rollout {rollout_id} has no driver ({_lease_words(rollout)}): "
                                        "resume it (take it over) or abort it")
        rollout.requested = action
        rollout.save(update_fields=["requested", "updated_at"])
        ControlEvent.objects.create(action=f"rollout_{action}_requested", target=f"rollout:{rollout.pk}",
                                    actor_name=actor, detail={})
    return rollout


def rollout_take_over(*, rollout_id: int, actor: str, driver: str | None = None) -> Rollout:
    """Take a stale rollout's lease (RolloutError ``lease_held`` while its driver
    holds it, ``not_active`` once it ended); audited. Then ``rollout_run`` goes on
    from its recorded step, or ``rollout_abort`` ends it."""
    with transaction.atomic():
        rollout = Rollout.objects.select_for_update().get(pk=rollout_id)
        if rollout.state not in Rollout.ACTIVE:
            raise RolloutError("not_active", f"rollout {rollout_id} is {rollout.state}")
        if not rollout.stale:
            raise RolloutError("lease_held", f"rollout {rollout_id} is driven by {rollout.driver} "
                                             f"(lease until {rollout.lease_expires_at:%H:%M:%S} UTC)")
        previous, lapsed = rollout.driver, _lease_words(rollout)
        rollout.driver = driver or new_driver()
        rollout.lease_expires_at = ROLLOUT_JOB.lease_end(timezone.now())
        rollout.save(update_fields=["driver", "lease_expires_at", "updated_at"])
        index = rollout.step_index
        step = (f"at step {index + 1}/{len(rollout.steps)} ({rollout.steps[index]}%)" if index >= 0
                else "before its first step")
        ControlEvent.objects.create(
            action="rollout_taken_over", target=f"rollout:{rollout.pk}:{rollout.model}@{rollout.version}",
            actor_name=actor, detail={"reason": f"{rollout.driver} took over {step}: {lapsed}",
                                      "previous_driver": previous, "driver": rollout.driver,
                                      "step_index": rollout.step_index, "state": rollout.state})
    logger.info("rollout %s taken over by %s from %s", rollout.pk, rollout.driver, previous)
    return rollout


def rollout_abort(*, rollout_id: int, actor: str) -> Rollout:
    """End a stale rollout here: take it over, roll back what it published (the
    content of its base document), or fail it when no step was published."""
    rollout = rollout_take_over(rollout_id=rollout_id, actor=actor)
    lease = _Lease(rollout)
    why = f"aborted by {actor}: its driver had stopped"
    if rollout.step_index >= 0:
        return _roll_back(rollout, lease, why, {})
    with transaction.atomic():
        lease.hold()
        lease.set(state=Rollout.State.FAILED, reason=why, requested="")
        _audit(rollout, "rollout_failed", why)
    return rollout


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
    """Drive the rollout to promoted, rolled_back or failed (module docstring),
    from its recorded step: the first, or where a driver that was taken over
    stopped. The caller holds its lease (rollout_start, rollout_take_over)."""
    lease = _Lease(rollout)
    try:
        return _drive(rollout, lease, progress)
    except LeaseLost as exc:
        progress(f"stopped: {exc} (taken over)")
        logger.warning("rollout %s: %s; this driver stops", rollout.pk, exc)
        rollout.refresh_from_db()
        return rollout


def _drive(rollout: Rollout, lease: _Lease, progress) -> Rollout:
    thresholds = config.ConfigSnapshot.of(0, None, documents.current_content()).rollout
    if rollout.state == Rollout.State.WAITING:
        deadline = time.monotonic() + thresholds["ready_timeout_s"]
        progress(f"waiting for a worker ready with {rollout.model}@{rollout.version}")
        while not ready_workers(rollout.model, rollout.version):
            lease.renew()
            if rollout.requested == "rollback" or time.monotonic() > deadline:
                why = ("rollback requested" if rollout.requested == "rollback" else
                       f"no worker was ready with {rollout.model}@{rollout.version} within "
                       f"{thresholds['ready_timeout_s']:.0f}s: no traffic moved")
                with transaction.atomic():
                    lease.hold()
                    lease.set(state=Rollout.State.FAILED, reason=why, requested="")
                    _audit(rollout, "rollout_failed", why)
                return rollout
            lease.wait(TICK_S)
        lease.set(state=Rollout.State.RUNNING)
    resumed = rollout.step_index  # -1: no step published yet
    if resumed >= 0:
        progress(f"resuming at step {resumed + 1}/{len(rollout.steps)} ({rollout.steps[resumed]}%)")
    for index in range(max(resumed, 0), len(rollout.steps)):
        percent = rollout.steps[index]
        if index > resumed:
            _publish_step(rollout, lease, index)
            progress(f"step {index + 1}/{len(rollout.steps)}: {percent}%")
        if percent == 100:
            break
        outcome = _watch(rollout, lease, thresholds, progress)
        if outcome is not None:
            return outcome
    why = f"{rollout.model}@{rollout.version} serves 100% after clean windows"
    with transaction.atomic():
        lease.hold()
        lease.set(state=Rollout.State.PROMOTED, reason=why, requested="")
        _audit(rollout, "rollout_promoted", why, figures=rollout.figures)
    progress("promoted")
    return rollout


def _publish_step(rollout: Rollout, lease: _Lease, index: int) -> None:
    """Step ``index``'s document, its step_index and its audit entry, as one
    transaction under the lease: recorded if and only if published."""
    percent = rollout.steps[index]
    with transaction.atomic():
        lease.hold()
        record = documents.config_publish(
            content=_step_content(rollout, percent), actor=rollout.created_by, action="rollout_step",
            reason=f"rollout {rollout.pk}: {rollout.model}@{rollout.version} at {percent}%",
            detail={"rollout": rollout.pk, "percent": percent})
        lease.set(step_index=index)
        _audit(rollout, "rollout_step", f"{percent}% to {rollout.version}", percent=percent,
               document=record.number, driver=lease.owner)


def _watch(rollout: Rollout, lease: _Lease, thresholds: dict, progress) -> Rollout | None:
    """One step's window(s); the rollout when it ended here (rolled back), else None."""
    since, extensions = timezone.now(), 0
    window_end = time.monotonic() + thresholds["window_s"]
    while True:
        lease.wait(TICK_S)
        lease.renew()
        if rollout.requested == "rollback":
            return _roll_back(rollout, lease, "rollback requested by an operator", {})
        if rollout.requested == "promote":
            lease.set(requested="")
            _audit(rollout, "rollout_promote_step", "promoted by an operator")
            return None
        if rollout.requested == "pause" and rollout.state != Rollout.State.PAUSED:
            lease.set(state=Rollout.State.PAUSED)
            _audit(rollout, "rollout_paused", "paused by an operator")
        if rollout.requested == "resume" and rollout.state == Rollout.State.PAUSED:
            lease.set(state=Rollout.State.RUNNING, requested="")
            _audit(rollout, "rollout_resumed", "resumed by an operator")
            window_end = time.monotonic() + thresholds["window_s"]
        if rollout.state == Rollout.State.PAUSED or time.monotonic() < window_end:
            continue
        canary = window_figures(model=rollout.model, version=rollout.version, since=since)
        stable = window_figures(model=rollout.model, version=rollout.stable_version, since=since)
        figures = {"canary": canary.as_dict(), "stable": stable.as_dict(), "window_s": thresholds["window_s"],
                   "extensions": extensions, "thresholds": {k: thresholds[k] for k in (
                       "max_error_rate_delta", "max_p99_ratio", "min_requests")}}
        lease.set(figures=figures)
        if canary.requests < thresholds["min_requests"] and extensions < 2:
            extensions += 1
            window_end = time.monotonic() + thresholds["window_s"]
            progress(f"window extended: {canary.requests} canary requests < {thresholds['min_requests']}")
            continue
        verdict, why = decide(canary, stable, thresholds)
        progress(f"window: {why}")
        if verdict == "rollback":
            return _roll_back(rollout, lease, why, figures)
        _audit(rollout, "rollout_window_clean", why, figures=figures)
        return None


def _roll_back(rollout: Rollout, lease: _Lease, why: str, figures: dict) -> Rollout:
    with transaction.atomic():
        lease.hold()
        record = documents.config_publish(
            content=documents.document_content(rollout.base_document), actor=rollout.created_by,
            action="config_rollback", reason=f"rollout {rollout.pk} rolled back: {why}",
            detail={"rollout": rollout.pk, "content_of": rollout.base_document})
        lease.set(state=Rollout.State.ROLLED_BACK, reason=why, requested="")
        _audit(rollout, "rollout_rolled_back", why, figures=figures, document=record.number,
               content_of=rollout.base_document)
    return rollout
