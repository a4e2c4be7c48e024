"""Webhook writes: endpoints (register, rotate the secret, remove), events
(`webhook_emit`, called by the playground's services inside the transaction of
the change they report) and redelivery."""

from __future__ import annotations

import json
import time
import uuid

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.commit import after_commit
from core.error_codes import DomainError

from .delivery import schedule
from .models import DeliveryStatus, WebhookDelivery, WebhookEndpoint, WebhookEvent, new_secret
from .urlcheck import check_webhook_url


def _check_events(events) -> list[str]:
    if not isinstance(events, list) or not events:
        raise DomainError(f"events must be a non-empty list of: {', '.join(WebhookEvent.values)}.",
                          code="invalid_events", field="events")
    unknown = sorted({e for e in events if e not in WebhookEvent.values}, key=str)
    if unknown:
        raise DomainError(f"Unknown events: {', '.join(map(str, unknown))}; known: "
                          f"{', '.join(WebhookEvent.values)}.", code="invalid_events", field="events")
    return sorted(set(events))


def endpoint_create(*, owner, url, events, prompt=None, description: str = "") -> WebhookEndpoint:
    """`prompt`: a prompt the owner owns (access checked by the caller), or None for all of theirs."""
    url = check_webhook_url(url)
    events = _check_events(events)
    if not isinstance(description, str) or len(description) > 200:
        raise DomainError("description is a string of at most 200 characters.", code="invalid_request",
                          field="description")
    if WebhookEndpoint.objects.filter(owner=owner).count() >= settings.WEBHOOK_MAX_ENDPOINTS:
        raise DomainError(f"At most {settings.WEBHOOK_MAX_ENDPOINTS} webhook endpoints per account.",
                          code="too_many_webhooks")
    return WebhookEndpoint.objects.create(owner=owner, prompt=prompt, url=url, events=events,
                                          description=description)


def endpoint_secret_rotate(*, endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """A new secret for every attempt from now on (each is signed when it is sent),
    retries of earlier events included; receivers accept both secrets while they
    switch over (promptyard.webhooks.verify takes several)."""
    endpoint.secret = new_secret()
    endpoint.secret_rotated_at = timezone.now()
    endpoint.save(update_fields=["secret", "secret_rotated_at"])
    return endpoint


def endpoint_delete(*, endpoint: WebhookEndpoint) -> None:
    endpoint.delete()  # its pending deliveries go with it; their queued attempts find nothing


def _delivery(*, endpoint: WebhookEndpoint, event: str, event_id, body: bytes,
              redelivery_of=None) -> WebhookDelivery:
    # Not signed yet: each attempt signs the body with its own timestamp.
    return WebhookDelivery.objects.create(
        endpoint=endpoint, event=event, event_id=event_id, body=body, timestamp=int(time.time()),
        signature="", redelivery_of=redelivery_of, next_attempt_at=timezone.now())


def _schedule_on_commit(ids: list) -> None:
    for delivery_id in ids:
        after_commit(schedule, delivery_id)


def webhook_emit(*, prompt, event: str, data: dict) -> list[WebhookDelivery]:
    """Write one delivery per subscribed endpoint of the prompt's owner, in the
    caller's transaction; their attempts are queued once it commits."""
    if event not in WebhookEvent.values:
        raise ValueError(f"unknown webhook event {event!r}")
    endpoints = [e for e in WebhookEndpoint.objects.filter(owner_id=prompt.owner_id)
                 .filter(Q(prompt__isnull=True) | Q(prompt=prompt)) if event in e.events]
    if not endpoints:
        return []
    event_id = uuid.uuid4()
    body = json.dumps({"id": str(event_id), "type": event, "created_at": timezone.now().isoformat(),
                       "prompt": {"id": str(prompt.pk), "title": prompt.title}, "data": data},
                      separators=(",", ":"), ensure_ascii=False).encode()
    deliveries = [_delivery(endpoint=e, event=event, event_id=event_id, body=body) for e in endpoints]
    _schedule_on_commit([d.pk for d in deliveries])
    return deliveries


def delivery_redeliver(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """A new delivery of the same event (same body and event id)."""
    with transaction.atomic():
        again = _delivery(endpoint=delivery.endpoint, event=delivery.event, event_id=delivery.event_id,
                          body=bytes(delivery.body), redelivery_of=delivery)
        _schedule_on_commit([again.pk])
    return again


__all__ = ["DeliveryStatus", "delivery_redeliver", "endpoint_create", "endpoint_delete",
           "endpoint_secret_rotate", "webhook_emit"]
