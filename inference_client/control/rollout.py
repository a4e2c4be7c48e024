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
3. ``canary.decide``: roll back when the canary's error rate exceeds the stable one's by
   more than rollout.max_error_rate_delta, or its p99 latency exceeds the stable
   p99 times rollout.max_p99_ratio, or it served nothing at all; else go on. The
   last step (100) promotes. Rollback republishes the content of the document the
   rollout started from (N-1) as the next number.

Operators (the admin action, or manage.py deploy --pause/--resume/--promote/
--rollback) set ``requested``; the loop acts on it within half a second.

A rollout is a job of core.jobs, a tick a step. Its lease keeps it from
outliving its driver (manage.py deploy, or the page's thread: ``Rollout.driver``),
renewed every tick, with no database connection held between ticks; every write
(a step, a state, a rollback) is conditional on it, and a step's document, its
step_index and its audit entry are one transaction, so the recorded step is
exactly what was published. When a driver dies (or hangs past ROLLOUT_LEASE_S),
the rollout is ``stale``: another driver takes it over (``rollout_take_over``:
deploy --resume, the page's Resume) and goes on from the recorded step, watching
that step's window afresh (the figures before the take-over are not its own), or
aborts it (``rollout_abort``: rolls back what was published). A driver that comes
back after losing its lease stops at its next write (LeaseLost) without writing:
never two drivers stepping one rollout."""

from __future__ import annotations

import dataclasses
import datetime
import logging
import os
import socket
import uuid
from collections.abc import Callable

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.jobs import BUSY, Job, JobKind, LeaseLost, drive
from inference_client.control import documents
from inference_client.control.canary import decide, window_figures
from inference_client.models import ControlEvent, ModelVersion, Rollout
from inference_protocol import config
from inference_protocol.backend import live_workers
from inference_protocol.catalog import served_name
from inference_protocol.config_document import version_weight

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


class _Lease(Job):
    """The driver's hold on one rollout: renewals and writes, each conditional on it."""

    def __init__(self, rollout: Rollout, clock=None):
        super().__init__(ROLLOUT_JOB, rollout.pk, owner=rollout.driver, clock=clock)
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
    weights = {v: version_weight(e) for v, e in (spec.get("versions") or {}).items()}
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


@dataclasses.dataclass
class _Work:
    lease: _Lease
    thresholds: dict
    progress: Callable[[str], None]
    ready_by: datetime.datetime  # waiting for a worker gives up then
    index: int  # the step published or to publish next
    published: int  # the last step published (-1: none)
    watching: int = -1  # the step whose window runs
    since: datetime.datetime | None = None
    window_end: datetime.datetime | None = None
    extensions: int = 0


def rollout_run(rollout: Rollout, *, progress=lambda message: None) -> Rollout:
    """Drive the rollout to promoted, rolled_back or failed (module docstring),
    from its recorded step: the first, or where a driver that was taken over
    stopped. The caller holds its lease (rollout_start, rollout_take_over)."""
    try:
        if drive(ROLLOUT_JOB, rollout.pk, owner=rollout.driver, rollout=rollout, progress=progress) == BUSY:
            raise LeaseLost(f"rollout {rollout.pk} is no longer driven by {rollout.driver}")
    except LeaseLost as exc:
        progress(f"stopped: {exc} (taken over)")
        logger.warning("rollout %s: %s; this driver stops", rollout.pk, exc)
    rollout.refresh_from_db()
    return rollout


def _start(job: Job, rollout: Rollout, progress) -> _Work:
    thresholds = config.ConfigSnapshot.of(0, None, documents.current_content()).rollout
    lease = _Lease(rollout, clock=job.clock)
    if rollout.state == Rollout.State.WAITING:
        progress(f"waiting for a worker ready with {rollout.model}@{rollout.version}")
    elif rollout.step_index >= 0:
        index = rollout.step_index
        progress(f"resuming at step {index + 1}/{len(rollout.steps)} ({rollout.steps[index]}%)")
    ready_by = job.clock.now() + datetime.timedelta(seconds=thresholds["ready_timeout_s"])
    return _Work(lease=lease, thresholds=thresholds, progress=progress, ready_by=ready_by,
                 index=max(rollout.step_index, 0), published=rollout.step_index)


def _step(job: Job, work: _Work) -> str | None:
    """One tick: wait for readiness, publish the next step, or watch its window."""
    rollout, lease = work.lease.rollout, work.lease
    rollout.refresh_from_db()  # what operators requested meanwhile
    if rollout.state == Rollout.State.WAITING:
        return _wait_ready(work)
    if work.index > work.published:
        _publish_step(rollout, lease, work.index)
        work.published = work.index
        work.progress(f"step {work.index + 1}/{len(rollout.steps)}: {rollout.steps[work.index]}%")
    if rollout.steps[work.index] == 100:
        why = f"{rollout.model}@{rollout.version} serves 100% after clean windows"
        with transaction.atomic():
            lease.hold()
            lease.set(state=Rollout.State.PROMOTED, reason=why, requested="")
            _audit(rollout, "rollout_promoted", why, figures=rollout.figures)
        work.progress("promoted")
        return Rollout.State.PROMOTED
    outcome = _watch(work)
    if outcome == "next":
        work.index += 1
        return None
    return outcome


def _wait_ready(work: _Work) -> str | None:
    rollout, lease = work.lease.rollout, work.lease
    if ready_workers(rollout.model, rollout.version):
        lease.set(state=Rollout.State.RUNNING)
        return None
    if rollout.requested == "rollback" or lease.clock.now() > work.ready_by:
        why = ("rollback requested" if rollout.requested == "rollback" else
               f"no worker was ready with {rollout.model}@{rollout.version} within "
               f"{work.thresholds['ready_timeout_s']:.0f}s: no traffic moved")
        with transaction.atomic():
            lease.hold()
            lease.set(state=Rollout.State.FAILED, reason=why, requested="")
            _audit(rollout, "rollout_failed", why)
        return Rollout.State.FAILED
    lease.wait(TICK_S)
    return None


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


def _watch(work: _Work) -> str | None:
    """One tick of a step's window(s), started afresh for each step (and on a
    resume): None while it runs, "next" when it was clean, else the rollout's end."""
    rollout, lease, thresholds = work.lease.rollout, work.lease, work.thresholds
    window = datetime.timedelta(seconds=thresholds["window_s"])
    if work.watching != work.index:
        work.watching, work.since, work.extensions = work.index, lease.clock.now(), 0
        work.window_end = work.since + window
    lease.wait(TICK_S)
    rollout.refresh_from_db()
    if rollout.requested == "rollback":
        _roll_back(rollout, lease, "rollback requested by an operator", {})
        return Rollout.State.ROLLED_BACK
    if rollout.requested == "promote":
        lease.set(requested="")
        _audit(rollout, "rollout_promote_step", "promoted by an operator")
        return "next"
    if rollout.requested == "pause" and rollout.state != Rollout.State.PAUSED:
        lease.set(state=Rollout.State.PAUSED)
        _audit(rollout, "rollout_paused", "paused by an operator")
    if rollout.requested == "resume" and rollout.state == Rollout.State.PAUSED:
        lease.set(state=Rollout.State.RUNNING, requested="")
        _audit(rollout, "rollout_resumed", "resumed by an operator")
        work.window_end = lease.clock.now() + window
    assert work.window_end is not None  # set when the watch of this step began
    if rollout.state == Rollout.State.PAUSED or lease.clock.now() < work.window_end:
        return None
    canary = window_figures(model=rollout.model, version=rollout.version, since=work.since)
    stable = window_figures(model=rollout.model, version=rollout.stable_version, since=work.since)
    figures = {"canary": canary.as_dict(), "stable": stable.as_dict(), "window_s": thresholds["window_s"],
               "extensions": work.extensions, "thresholds": {k: thresholds[k] for k in (
                   "max_error_rate_delta", "max_p99_ratio", "min_requests")}}
    lease.set(figures=figures)
    if canary.requests < thresholds["min_requests"] and work.extensions < 2:
        work.extensions += 1
        work.window_end = lease.clock.now() + window
        work.progress(f"window extended: {canary.requests} canary requests < {thresholds['min_requests']}")
        return None
    verdict, why = decide(canary, stable, thresholds)
    work.progress(f"window: {why}")
    if verdict == "rollback":
        _roll_back(rollout, lease, why, figures)
        return Rollout.State.ROLLED_BACK
    _audit(rollout, "rollout_window_clean", why, figures=figures)
    return "next"


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


# A job of core.jobs whose lease fields predate it (driver, lease_expires_at); never cancelled
# by a flag: an operator's rollback is a request the step acts on.
ROLLOUT_JOB = JobKind(name="rollout", model=Rollout, active=tuple(Rollout.ACTIVE),
                      lease_setting="ROLLOUT_LEASE_S", start=_start, step=_step,
                      finish=lambda job, work, outcome: outcome, status_field="state", cancel_field="",
                      owner_field="driver", until_field="lease_expires_at")
