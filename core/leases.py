"""What every leased background job shares below its driver (core.jobs):
giving the database connection back before a wait (``release_connection``), so
waiting jobs hold none of a process's pool, and the per-user limit on active
jobs of a kind (``job_slot_check``: a create past it is a 429).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import QuerySet

from core.error_codes import DomainError

# The Retry-After of a create refused for too many active jobs: a hint only (a
# slot frees when one of the user's jobs ends, which nothing here can foresee).
JOB_SLOT_RETRY_AFTER_S = 30


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
        raise DomainError(f"You have {count} active {kind} jobs; at most {limit} may be active at once "
                          f"({setting}). Wait for one to finish, or cancel one.",
                          code="too_many_active_jobs",
                          extra={"kind": kind, "limit": limit, "active": count, "setting": setting},
                          headers={"Retry-After": str(JOB_SLOT_RETRY_AFTER_S)})
