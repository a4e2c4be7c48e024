"""Webhook reads, always scoped to the owner: someone else's endpoint is a 404."""

from __future__ import annotations

from core.error_codes import DomainError

from .models import WebhookDelivery, WebhookEndpoint


def endpoint_list(*, owner):
    return WebhookEndpoint.objects.filter(owner=owner).select_related("prompt")


def endpoint_get(*, owner, endpoint_id) -> WebhookEndpoint:
    endpoint = endpoint_list(owner=owner).filter(pk=endpoint_id).first()
    if endpoint is None:
        raise DomainError("Webhook endpoint not found.", code="webhook_not_found")
    return endpoint


def delivery_list(*, endpoint: WebhookEndpoint):
    return WebhookDelivery.objects.filter(endpoint=endpoint).defer("body")


def delivery_get(*, endpoint: WebhookEndpoint, delivery_id) -> WebhookDelivery:
    delivery = (WebhookDelivery.objects.filter(endpoint=endpoint, pk=delivery_id)
                .select_related("endpoint").first())
    if delivery is None:
        raise DomainError("Delivery not found.", code="delivery_not_found")
    return delivery
