"""Sending one delivery attempt, and scheduling the next.

`attempt_delivery` is what the Celery task (webhooks.tasks) runs:
one POST, signed with a fresh timestamp, to the addresses the URL check
passed (webhooks.sending); a 2xx ends the delivery as succeeded;
anything else (an error status, a redirect, a timeout, an answer too long,
a refused connection, an address now inside the network) schedules the next
attempt after an exponential backoff, and the last one ends it as failed.
Nothing is dropped without a row saying so.

A pending row's `next_attempt_at` is when its next attempt is due, and an
attempt runs only when it is: queuing one delivery twice (a sweep, a message
that came back) never sends it twice at once. `deliveries_sweep` queues again
the rows whose attempt is overdue (never queued, or lost with a process); Celery
beat runs it with a broker, `Sweeper` (a thread of the serving process) without.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from urllib.parse import urlsplit

from celery import current_app
from django.conf import settings
from django.db import close_old_connections, transaction
from django.db.models import F
from django.utils import timezone

from core.commit import after_commit
from core.error_codes import DomainError

from . import sending
from .models import DeliveryStatus, WebhookDelivery
from .signing import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, sign
from .urlcheck import check_host, check_scheme, default_port

log = logging.getLogger(__name__)


def backoff_s(attempts: int) -> float:
    """Seconds before the attempt after `attempts` failed ones."""
    return min(settings.WEBHOOK_BACKOFF_BASE_S * 2 ** (attempts - 1), settings.WEBHOOK_BACKOFF_MAX_S)


# An attempt may start this much before its due time: the clocks of the process
# that queued it and of the one running it differ a little.
CLOCK_SKEW_S = 1.0


def _grace() -> datetime.timedelta:
    return datetime.timedelta(seconds=settings.WEBHOOK_SWEEP_GRACE_S)


# The Celery task that runs attempt_delivery (tasks.py), sent by name: tasks.py
# imports this module. The name predates the webhooks app; queued messages carry it.
DELIVER_TASK = "playground.webhooks.deliver"


def schedule(delivery_id, *, countdown: float = 0.0) -> None:
    """Queue an attempt: on the webhooks Celery queue, or (no broker, the embedded
    default) on a timer thread of this process."""
    if settings.CELERY_BROKER_URL:
        try:
            current_app.send_task(DELIVER_TASK, args=[str(delivery_id)], queue=settings.WEBHOOK_QUEUE,
                                  countdown=countdown, ignore_result=True)
        except Exception as exc:  # the row stays pending, visible in the log; the sweep queues it again
            log.warning("webhook delivery %s could not be queued: %r", delivery_id, exc)
            # No message can be late: the first sweep after its due time takes it, without the grace.
            due = timezone.now() + datetime.timedelta(seconds=countdown)
            WebhookDelivery.objects.filter(pk=delivery_id, status=DeliveryStatus.PENDING).update(
                last_error=f"not queued: {exc!r}"[:500], next_attempt_at=due - _grace())
        return
    timer = threading.Timer(countdown, _run_in_thread, args=[str(delivery_id)])
    timer.daemon = True
    timer.start()


def _run_in_thread(delivery_id: str, tries: int = 0) -> None:
    try:
        attempt_delivery(delivery_id)
    except Exception as exc:  # the database was busy or away: try again, never drop it silently
        log.warning("webhook delivery %s: attempt raised %r", delivery_id, exc)
        if tries < 5:
            timer = threading.Timer(1.0 * 2 ** tries, _run_in_thread, args=[delivery_id, tries + 1])
            timer.daemon = True
            timer.start()
    finally:
        close_old_connections()


def _post(delivery: WebhookDelivery, *, timestamp: int, signature: str) -> tuple[int | None, str]:
    url = delivery.endpoint.url
    parts = urlsplit(url)
    try:
        check_scheme(parts.scheme)
        addresses = check_host(parts.hostname, parts.port or default_port(parts.scheme))
    except DomainError as exc:
        return None, exc.message
    headers = {"Content-Type": "application/json", "User-Agent": "Promptyard-Webhooks/1",
               SIGNATURE_HEADER: signature, TIMESTAMP_HEADER: str(timestamp),
               DELIVERY_HEADER: str(delivery.pk), EVENT_HEADER: delivery.event}
    try:
        status = sending.post(url, addresses=addresses, headers=headers, body=bytes(delivery.body),
                              timeout_s=settings.WEBHOOK_TIMEOUT_S,
                              total_s=settings.WEBHOOK_ATTEMPT_TIMEOUT_S,
                              max_response_bytes=settings.WEBHOOK_MAX_RESPONSE_BYTES)
    except sending.SEND_ERRORS as exc:
        return None, f"{type(exc).__name__}: {exc}"[:500]
    if 200 <= status < 300:
        return status, ""
    return status, f"HTTP {status}"


def attempt_lease_s() -> float:
    """How long an attempt may run before the sweep counts it as lost: its total
    deadline, and WEBHOOK_TIMEOUT_S more for resolving the host and writing the row."""
    return settings.WEBHOOK_ATTEMPT_TIMEOUT_S + settings.WEBHOOK_TIMEOUT_S


def attempt_delivery(delivery_id) -> str:
    """One attempt; returns the delivery's status after it."""
    # One conditional UPDATE claims the attempt (no read-then-write transaction: on
    # SQLite that upgrade fails at once with "database is locked" under contention).
    # Only a due delivery is claimed, and claiming moves its due time past the attempt:
    # a second message for it (a sweep's, one that came back) finds it not due.
    now = timezone.now()
    claimed = WebhookDelivery.objects.filter(
        pk=delivery_id, status=DeliveryStatus.PENDING,
        next_attempt_at__lte=now + datetime.timedelta(seconds=CLOCK_SKEW_S),
    ).update(attempts=F("attempts") + 1, next_attempt_at=now + datetime.timedelta(seconds=attempt_lease_s()))
    delivery = WebhookDelivery.objects.select_related("endpoint").filter(pk=delivery_id).first()
    if not claimed or delivery is None:
        # A duplicate message, an attempt not due yet, a finished or deleted delivery.
        return delivery.status if delivery else "missing"
    # Signed now, with the endpoint's secret now: every attempt carries a fresh timestamp.
    timestamp = int(time.time())
    signature = sign(secret=delivery.endpoint.secret, timestamp=timestamp, body=bytes(delivery.body))
    code, error = _post(delivery, timestamp=timestamp, signature=signature)
    now = timezone.now()
    update = {"response_code": code, "last_error": error, "timestamp": timestamp, "signature": signature}
    if not error:
        update.update(status=DeliveryStatus.SUCCEEDED, finished_at=now, next_attempt_at=None)
    elif delivery.attempts >= settings.WEBHOOK_MAX_ATTEMPTS:
        update.update(status=DeliveryStatus.FAILED, finished_at=now, next_attempt_at=None)
    else:
        wait = backoff_s(delivery.attempts)
        update["next_attempt_at"] = now + datetime.timedelta(seconds=wait)
    WebhookDelivery.objects.filter(pk=delivery_id).update(**update)
    if update.get("status") is None:
        schedule(delivery_id, countdown=wait)
        return DeliveryStatus.PENDING
    return update["status"]


def deliveries_sweep(*, limit: int | None = None) -> list[str]:
    """Queue again the pending deliveries whose next attempt is overdue by more
    than WEBHOOK_SWEEP_GRACE_S; returns their ids.

    Concurrent sweepers (two beat processes, several embedded servers) take
    disjoint rows: SKIP LOCKED (PostgreSQL) passes over rows another sweep holds,
    and a row taken is due now, out of every sweep's reach until the grace has
    passed again. Queued twice anyway (SQLite has no row locks), the attempt runs
    once: it is claimed only while due."""
    now = timezone.now()
    with transaction.atomic():
        ids = list(WebhookDelivery.objects.select_for_update(skip_locked=True)
                   .filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now - _grace())
                   .order_by("next_attempt_at")
                   .values_list("pk", flat=True)[:limit or settings.WEBHOOK_SWEEP_BATCH])
        if ids:
            WebhookDelivery.objects.filter(pk__in=ids).update(next_attempt_at=now)
            for delivery_id in ids:
                after_commit(schedule, delivery_id)
    if ids:
        log.info("webhook sweep: %d overdue deliveries queued again", len(ids))
    return [str(i) for i in ids]


class Sweeper:
    """The embedded default's sweep (no broker, so no beat): a thread of the
    serving process sweeps at start, which recovers the deliveries whose timers
    died with the previous process, then every WEBHOOK_SWEEP_INTERVAL_S."""

    def __init__(self, interval: float | None = None):
        self.interval = settings.WEBHOOK_SWEEP_INTERVAL_S if interval is None else interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="webhook-sweep")

    def start(self) -> Sweeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            try:
                deliveries_sweep()
            except Exception:  # the database busy or away: the next tick tries again
                log.warning("webhook sweep failed", exc_info=True)
            finally:
                close_old_connections()
            if self._stop.wait(self.interval):
                return
