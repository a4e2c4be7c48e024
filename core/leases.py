"""Leases on database rows: the lower layer of the long jobs that a driver (a
thread of some process) runs a window at a time and stores as it goes: Batch
API batches (inference_client.batches) and evaluation runs
(playground.evals.runs).

A leased row has ``lease_owner`` (who holds it) and ``lease_until`` (null: no
one). A driver claims a row nobody holds (or that it holds already), renews the
lease after each window, and clears it when the job ends. A driver that dies
stops renewing: once the lease runs out the row is "unheld" again and the next
driver (a poll of ``manage.py batch_worker`` / ``eval_worker``, or a read of
the job) claims it and skips what the dead one had stored.

A driver does its database work in short bursts: before each wait (on
generations, on a budget, on a poll's sleep) it gives its connection back
(``release_connection``), so waiting jobs hold none of a process's pool. And
no user holds more than a set number of active jobs of a kind
(``job_slot_check``): a create past it is a 429.
"""

from __future__ import annotations

import datetime
import logging
import os
import socket
import threading
from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Q, QuerySet
from django.utils import timezone

from core.errors import ApiError

logger = logging.getLogger(__name__)

# The Retry-After of a create refused for too many active jobs: a hint only (a
# slot frees when one of the user's jobs ends, which nothing here can foresee).
JOB_SLOT_RETRY_AFTER_S = 30


def lease_owner_id() -> str:
    """This driver's name: host, process and thread."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"[:64]


def unheld(now: datetime.datetime | None = None) -> Q:
    """Rows no driver holds now (never claimed, cleared, or run out)."""
    return Q(lease_until__isnull=True) | Q(lease_until__lt=now or timezone.now())


def lease_claim(rows: QuerySet[Any], *, owner: str, seconds: float, **changes: Any) -> bool:
    """Take the lease of ``rows`` (one job, filtered to the states a driver may
    take) unless another driver holds it; ``changes`` are written in the same UPDATE."""
    now = timezone.now()
    return bool(rows.filter(unheld(now) | Q(lease_owner=owner)).update(
        lease_owner=owner, lease_until=now + datetime.timedelta(seconds=seconds), **changes))


def lease_renew(rows: QuerySet[Any], *, owner: str, seconds: float) -> bool:
    """Extend ``owner``'s lease; False when it lost it (run out and taken)."""
    return bool(rows.filter(lease_owner=owner).update(
        lease_until=timezone.now() + datetime.timedelta(seconds=seconds)))


def drive_in_thread(drive: Callable[[object], object], job_id: object, *, name: str) -> threading.Thread:
    """Run ``drive(job_id)`` on a daemon thread of this process. A driver that
    raises only logs: its lease runs out and the job resumes elsewhere."""
    def run() -> None:
        try:
            logger.info("%s: %s", name, drive(job_id))
        except Exception:
            logger.exception("driving %s failed; its lease will run out and it resumes", name)
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True, name=name)
    thread.start()
    return thread


class DriverThreads:
    """The drivers a worker command runs at once (at most ``most``), each on a
    thread of its own: a job waiting on a slow model holds up no other."""

    def __init__(self, most: int):
        self.most = max(1, most)
        self.threads: dict[str, threading.Thread] = {}

    def room(self) -> int:
        self.threads = {job: t for job, t in self.threads.items() if t.is_alive()}
        return self.most - len(self.threads)

    def start(self, drive: Callable[[object], object], job_id: object, *, name: str) -> bool:
        """Start driving ``job_id`` unless a thread here drives it already or none is free."""
        if str(job_id) in self.threads or self.room() <= 0:
            return False
        self.threads[str(job_id)] = drive_in_thread(drive, job_id, name=name)
        return True


def release_connection() -> None:
    """Give this thread's database connection back (to the pool, or closed)
    before a wait; the next query takes one again. Kept inside a transaction."""
    if not connection.in_atomic_block:
        connection.close()


def job_slot_check(*, user: Any, active: QuerySet[Any], limit: int, setting: str, kind: str) -> None:
    """Refuse a new job of ``kind`` (429 too_many_active_jobs, naming ``setting``)
    while ``user`` has ``limit`` ``active`` ones. Call it in the transaction that
    creates the job: it locks the user's row first, so one user's concurrent
    creates queue there and each counts the jobs committed before it."""
    if not connection.in_atomic_block:
        raise RuntimeError("job_slot_check runs inside the transaction that creates the job")
    list(get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk", flat=True))
    count = active.count()
    if count >= limit:
        raise ApiError(f"You have {count} active {kind} jobs; at most {limit} may be active at once "
                       f"({setting}). Wait for one to finish, or cancel one.",
                       code="too_many_active_jobs", status_code=429,
                       extra={"kind": kind, "limit": limit, "active": count, "setting": setting},
                       headers={"Retry-After": str(JOB_SLOT_RETRY_AFTER_S)})
