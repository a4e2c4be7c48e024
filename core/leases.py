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
"""

from __future__ import annotations

import datetime
import logging
import os
import socket
import threading
from collections.abc import Callable

from django.db import connection
from django.db.models import Q, QuerySet
from django.utils import timezone

logger = logging.getLogger(__name__)


def lease_owner_id() -> str:
    """This driver's name: host, process and thread."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"[:64]


def unheld(now: datetime.datetime | None = None) -> Q:
    """Rows no driver holds now (never claimed, cleared, or run out)."""
    return Q(lease_until__isnull=True) | Q(lease_until__lt=now or timezone.now())


def lease_claim(rows: QuerySet, *, owner: str, seconds: float, **changes) -> bool:
    """Take the lease of ``rows`` (one job, filtered to the states a driver may
    take) unless another driver holds it; ``changes`` are written in the same UPDATE."""
    now = timezone.now()
    return bool(rows.filter(unheld(now) | Q(lease_owner=owner)).update(
        lease_owner=owner, lease_until=now + datetime.timedelta(seconds=seconds), **changes))


def lease_renew(rows: QuerySet, *, owner: str, seconds: float) -> bool:
    """Extend ``owner``'s lease; False when it lost it (run out and taken)."""
    return bool(rows.filter(lease_owner=owner).update(
        lease_until=timezone.now() + datetime.timedelta(seconds=seconds)))


def drive_in_thread(drive: Callable[[object], object], job_id, *, name: str) -> None:
    """Run ``drive(job_id)`` on a daemon thread of this process. A driver that
    raises only logs: its lease runs out and the job resumes elsewhere."""
    def run():
        try:
            drive(job_id)
        except Exception:
            logger.exception("driving %s failed; its lease will run out and it resumes", name)
        finally:
            connection.close()

    threading.Thread(target=run, daemon=True, name=name).start()
