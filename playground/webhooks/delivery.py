"""Sending one delivery attempt, and scheduling the next.

`attempt_delivery` is what the Celery task (playground.webhooks.tasks) runs:
one POST; a 2xx ends the delivery as succeeded; anything else (an error
status, a redirect, a timeout, a refused connection, an address now inside
the network) schedules the next attempt after an exponential backoff, and the
last one ends it as failed. Nothing is dropped without a row saying so.
"""

from __future__ import annotations

import datetime
import logging
import threading
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.db import close_old_connections
from django.db.models import F
from django.utils import timezone

from core.errors import ApiError

from .models import DeliveryStatus, WebhookDelivery
from .signing import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER
from .urlcheck import check_host

log = logging.getLogger(__name__)


def backoff_s(attempts: int) -> float:
    """Seconds before the attempt after `attempts` failed ones."""
    return min(settings.WEBHOOK_BACKOFF_BASE_S * 2 ** (attempts - 1), settings.WEBHOOK_BACKOFF_MAX_S)


def schedule(delivery_id, *, countdown: float = 0.0) -> None:
    """Queue an attempt: on the webhooks Celery queue, or (no broker, the embedded
    default) on a timer thread of this process."""
    if settings.CELERY_BROKER_URL:
        from .tasks import deliver

        try:
            deliver.apply_async(args=[str(delivery_id)], queue=settings.WEBHOOK_QUEUE, countdown=countdown)
        except Exception as exc:  # the row stays pending, visible in the log, redeliverable
            log.warning("webhook delivery %s could not be queued: %r", delivery_id, exc)
            WebhookDelivery.objects.filter(pk=delivery_id).update(last_error=f"not queued: {exc!r}"[:500])
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


def _post(delivery: WebhookDelivery) -> tuple[int | None, str]:
    url = delivery.endpoint.url
    parts = urlsplit(url)
    try:
        check_host(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
    except ApiError as exc:
        return None, str(exc.detail)
    headers = {"Content-Type": "application/json", "User-Agent": "Promptyard-Webhooks/1",
               SIGNATURE_HEADER: delivery.signature, TIMESTAMP_HEADER: str(delivery.timestamp),
               DELIVERY_HEADER: str(delivery.pk), EVENT_HEADER: delivery.event}
    try:
        response = httpx.post(url, content=bytes(delivery.body), headers=headers,
                              timeout=settings.WEBHOOK_TIMEOUT_S, follow_redirects=False)
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: {exc}"[:500]
    if 200 <= response.status_code < 300:
        return response.status_code, ""
    return response.status_code, f"HTTP {response.status_code}"


def attempt_delivery(delivery_id) -> str:
    """One attempt; returns the delivery's status after it."""
    # One conditional UPDATE claims the attempt (no read-then-write transaction: on
    # SQLite that upgrade fails at once with "database is locked" under contention).
    claimed = WebhookDelivery.objects.filter(pk=delivery_id, status=DeliveryStatus.PENDING).update(
        attempts=F("attempts") + 1)
    delivery = WebhookDelivery.objects.select_related("endpoint").filter(pk=delivery_id).first()
    if not claimed or delivery is None:
        return delivery.status if delivery else "missing"  # a duplicate message, or a deleted endpoint
    code, error = _post(delivery)
    now = timezone.now()
    update = {"response_code": code, "last_error": error}
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
