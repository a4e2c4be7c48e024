"""One driver for every leased background job: evaluation runs, Batch API
batches, dataset imports, canary rollouts.

A job is a database row a driver (a thread of some process) works on a step at
a time, storing what each step did. Each kind is a ``JobKind``: its rules as
data (the model, the states a driver may take, the lease's setting, the slot
limit, who dispatches it) and three functions: ``start`` (load what is left,
skipping what earlier drivers stored), ``step`` (one step: ``None`` to go on,
else an outcome) and ``finish`` (write the outcome; returns the final status).
The driver (``drive``) is the same for every kind:

- claim: a driver takes the row's lease (``lease_owner``, ``lease_until``)
  only while nobody holds it; one owner at a time, across processes;
- heartbeat: after each step it renews the lease; a driver that lost it
  (it hung past the lease and another took over) stops ("busy");
- resume: a driver that dies stops renewing; once the lease runs out the row
  is unheld and the next driver (a worker's poll, a read of the job) claims it
  and ``start`` skips what the dead one stored: nothing is done twice;
- cancel: a job whose cancel flag is set stops before its next step, and
  ``finish`` ends it and clears the lease;
- slots: no user holds more than a set number of active jobs of a kind
  (``JobKind.slot_check``: a create past it is a 429);
- no connection is held while waiting: ``Job.wait`` and ``Job.keep_going``
  give it back (``release_connection``) first;
- shutdown: once the process is stopping (core.shutdown: SIGTERM), a driver
  lets its lease go after the step it is in (``PAUSED``), so the next driver
  takes the job at once, not when the lease runs out; waits end early.

Time is read through a clock (``WallClock``; tests pass a virtual one).
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from django.conf import settings
from django.db import connection
from django.db.models import Model, Q, QuerySet
from django.utils import timezone

from core import shutdown
from core.commit import after_commit
from core.leases import job_slot_check, release_connection
from core.liveness import mark
from core.startup import check_services

logger = logging.getLogger(__name__)

# Outcomes a step returns that the driver handles itself.
BUSY = "busy"  # the lease was lost: another driver continues
PAUSED = "paused"  # let go on purpose (the lease cleared): the next poll resumes
CANCELLED = "cancelled"


class LeaseLost(Exception):
    """This driver no longer holds the job: it stops without writing."""


class Clock(Protocol):
    def now(self) -> datetime.datetime: ...

    def sleep(self, seconds: float) -> None: ...


class WallClock:
    def now(self) -> datetime.datetime:
        return timezone.now()

    def sleep(self, seconds: float) -> None:
        shutdown.pause(seconds)


def lease_owner_id() -> str:
    """This driver's name: host, process and thread."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"[:64]


@dataclasses.dataclass(frozen=True)
class Slots:
    """At most ``settings.<setting>`` active jobs per user (``user_field``)."""

    user_field: str
    setting: str
    label: str  # words for the 429: "evaluation run"


@dataclasses.dataclass(frozen=True)
class JobKind:
    name: str  # thread names, worker output: "run", "batch", ...
    model: type[Model]
    active: tuple[str, ...]  # the states a driver may take
    lease_setting: str  # seconds a lease lasts without a heartbeat
    start: Callable[..., Any]
    step: Callable[[Job, Any], str | None]
    finish: Callable[[Job, Any, str], str]
    dispatch_setting: str = ""  # "thread" there: a thread of the creating process drives it
    slots: Slots | None = None
    status_field: str = "status"
    cancel_field: str = "cancel_requested"  # "": the kind is not cancelled this way
    owner_field: str = "lease_owner"
    until_field: str = "lease_until"

    def unheld(self, now: datetime.datetime) -> Q:
        """Rows no driver holds at ``now`` (never claimed, cleared, or run out)."""
        return Q(**{f"{self.until_field}__isnull": True}) | Q(**{f"{self.until_field}__lt": now})

    def active_rows(self) -> QuerySet[Any]:
        return self.model._default_manager.filter(**{f"{self.status_field}__in": self.active})

    def lease_end(self, now: datetime.datetime) -> datetime.datetime:
        return now + datetime.timedelta(seconds=getattr(settings, self.lease_setting))

    def slot_check(self, user: Any) -> None:
        """429 while ``user`` has its limit of active jobs of this kind; in the
        transaction that creates the job (core.leases.job_slot_check)."""
        assert self.slots is not None
        job_slot_check(user=user, active=self.active_rows().filter(**{self.slots.user_field: user}),
                       limit=getattr(settings, self.slots.setting), setting=self.slots.setting,
                       kind=self.slots.label)


class Job:
    """One job as its driver sees it: every write conditional on the lease."""

    def __init__(self, kind: JobKind, pk: Any, *, owner: str | None = None, clock: Clock | None = None):
        self.kind, self.pk = kind, pk
        self.owner = owner or lease_owner_id()
        self.clock: Clock = clock or WallClock()

    def rows(self) -> QuerySet[Any]:
        return self.kind.model._default_manager.filter(pk=self.pk)

    def mine(self) -> QuerySet[Any]:
        return self.rows().filter(**{self.kind.owner_field: self.owner})

    def claim(self, **changes: Any) -> bool:
        """Take the lease of an active job nobody else holds; ``changes`` are
        written in the same UPDATE."""
        now = self.clock.now()
        rows = self.kind.active_rows().filter(pk=self.pk).filter(
            self.kind.unheld(now) | Q(**{self.kind.owner_field: self.owner}))
        return bool(rows.update(**{self.kind.owner_field: self.owner,
                                   self.kind.until_field: self.kind.lease_end(now)}, **changes))

    def heartbeat(self) -> bool:
        """Extend the lease; False when this driver lost it (run out and taken)."""
        return bool(self.mine().filter(**{f"{self.kind.status_field}__in": self.kind.active}).update(
            **{self.kind.until_field: self.kind.lease_end(self.clock.now())}))

    def cancelled(self) -> bool:
        field = self.kind.cancel_field
        return bool(field) and self.rows().filter(**{field: True}).exists()

    def keep_going(self) -> bool:
        """Between waits within a step: not cancelled and the lease renewed;
        the connection goes back before the next wait."""
        try:
            return not self.cancelled() and self.heartbeat()
        finally:
            release_connection()

    def wait(self, seconds: float = 0) -> None:
        """Wait with no database connection held."""
        release_connection()
        self.clock.sleep(seconds)

    def write(self, **fields: Any) -> None:
        """Update the job's row while holding its lease (LeaseLost otherwise)."""
        if not self.mine().update(**fields):
            raise LeaseLost(f"{self.kind.name} {self.pk} is no longer driven by {self.owner}")

    def hold(self) -> None:
        """Lock the row for this transaction, still ours (a claim waits for it)."""
        if not list(self.mine().select_for_update().values_list("pk", flat=True)):
            raise LeaseLost(f"{self.kind.name} {self.pk} is no longer driven by {self.owner}")

    def end(self, **fields: Any) -> bool:
        """Write the job's end and clear its lease (only while holding it)."""
        return bool(self.mine().update(**fields, **{self.kind.until_field: None}))


def drive(kind: JobKind, pk: Any, *, owner: str | None = None, clock: Clock | None = None,
          **context: Any) -> str:
    """Drive a job to its end, a cancel, or until another driver holds it.
    Returns its final status, or "busy" / "paused"."""
    job = Job(kind, pk, owner=owner, clock=clock)
    if not job.claim():
        return BUSY
    work = kind.start(job, **context)
    while True:
        outcome = CANCELLED if job.cancelled() else kind.step(job, work)
        if outcome is None:
            if shutdown.stopping.is_set():
                job.end()
                logger.info("%s %s: stopping; its lease let go for the next driver", kind.name, pk)
                return PAUSED
            if job.heartbeat():
                continue
            logger.warning("%s %s: lease lost; another driver continues", kind.name, pk)
            return BUSY
        if outcome == BUSY:
            return BUSY
        if outcome == PAUSED:
            job.end()
            return PAUSED
        return kind.finish(job, work, outcome)


def request_cancel(kind: JobKind, pk: Any, *, clock: Clock | None = None, **changes: Any) -> bool:
    """Set the job's cancel flag (its driver stops before its next step); True
    when no driver holds it (the caller ends it at once)."""
    rows = kind.model._default_manager.filter(pk=pk)
    rows.update(**{kind.cancel_field: True}, **changes)
    return rows.filter(kind.unheld((clock or WallClock()).now())).exists()


def waiting(kind: JobKind, *, limit: int, clock: Clock | None = None) -> list[Any]:
    """Ids of the active jobs no driver holds (new ones, and ones whose driver
    died), oldest first."""
    rows = kind.active_rows().filter(kind.unheld((clock or WallClock()).now())).order_by("created_at")
    return list(rows.values_list("pk", flat=True)[:max(0, limit)])


def drive_in_thread(kind: JobKind, pk: Any) -> threading.Thread:
    """Drive a job on a daemon thread of this process. A driver that raises
    only logs: its lease runs out and the job resumes elsewhere."""
    name = f"{kind.name}-{pk}"

    def run() -> None:
        try:
            logger.info("%s: %s", name, drive(kind, pk))
        except Exception:
            logger.exception("driving %s failed; its lease will run out and it resumes", name)
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True, name=name)
    thread.start()
    return thread


def dispatch(kind: JobKind, pk: Any) -> None:
    """Once the transaction commits, drive a new job on a thread of this
    process where the kind's dispatch setting is "thread"; else a worker's poll
    takes it."""
    if getattr(settings, kind.dispatch_setting) == "thread":
        after_commit(drive_in_thread, kind, pk)


class DriverThreads:
    """The drivers a worker runs at once (at most ``most``), each on a thread
    of its own: a job waiting on a slow model holds up no other."""

    def __init__(self, most: int):
        self.most = max(1, most)
        self.threads: dict[str, threading.Thread] = {}

    def room(self) -> int:
        self.threads = {job: t for job, t in self.threads.items() if t.is_alive()}
        return self.most - len(self.threads)

    def start(self, kind: JobKind, pk: Any) -> bool:
        """Start driving a job unless a thread here drives it already or none is free."""
        key = f"{kind.name}-{pk}"
        if key in self.threads or self.room() <= 0:
            return False
        self.threads[key] = drive_in_thread(kind, pk)
        return True


def run_worker(kinds: Iterable[JobKind], *, once: bool, poll: float, drivers: int,
               say: Callable[[str], None], once_limit: int = 20) -> None:
    """A worker command's loop: drive the jobs of ``kinds`` that no process
    holds. ``once``: what waits now, one after the other, then return. SIGTERM
    stops it: no new job is taken, and each driver lets its lease go after its
    step; it waits SHUTDOWN_GRACE_S at most for them."""
    shutdown.stop_on_sigterm()
    if once:
        for kind in kinds:
            for pk in waiting(kind, limit=once_limit):
                if shutdown.stopping.is_set():
                    return
                say(f"{kind.name} {pk}: {drive(kind, pk)}")
        return
    check_services()  # one line naming an unreachable service, not a traceback per poll
    threads = DriverThreads(drivers)
    while not shutdown.stopping.is_set():
        for kind in kinds:
            mark(f"driver:{kind.name}", max(3 * poll, 10.0))  # for manage.py doctor
            for pk in waiting(kind, limit=threads.room()):
                if threads.start(kind, pk):
                    say(f"{kind.name} {pk}: started")
        release_connection()  # none held between polls
        shutdown.pause(poll)
    deadline = time.monotonic() + settings.SHUTDOWN_GRACE_S
    for thread in list(threads.threads.values()):
        thread.join(max(0.0, deadline - time.monotonic()))
    say(f"stopped; {threads.most - threads.room()} driver(s) still in a step")
