"""Webhook endpoints and the delivery log.

A delivery is written in the same transaction as the change it reports, with
its body fixed then: retries send the same bytes, each signed when it is sent
(a fresh timestamp, the endpoint's secret then), and a change that rolled back
sends nothing.
"""

import secrets
import uuid

from django.conf import settings
from django.db import models

# Tables keep the names they had in the playground app (Meta.db_table): an upgrade renames nothing.


class WebhookEvent(models.TextChoices):
    VERSION_CREATED = "version.created", "Version created"
    LABEL_MOVED = "label.moved", "Label moved (also undo, redo, removal)"
    SHARE_CREATED = "share.created", "Share created (link or grant)"
    SHARE_REVOKED = "share.revoked", "Share revoked (link or grant)"
    VERSION_REGRESSED = "version.regressed", "Version regressed after a label move (regression alarm)"


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


class WebhookEndpoint(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhooks")
    # None: every prompt the owner owns.
    prompt = models.ForeignKey("playground.Prompt", null=True, blank=True, on_delete=models.CASCADE,
                               related_name="webhooks")
    url = models.CharField(max_length=2000)
    events = models.JSONField(default=list)
    # Kept in clear: the server signs with it. Shown to the owner at creation and rotation.
    secret = models.CharField(max_length=100, default=new_secret)
    description = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    secret_rotated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "playground_webhookendpoint"
        ordering = ["-created_at"]


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class WebhookDelivery(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=40)
    event_id = models.UUIDField()  # the same for every endpoint and every redelivery of one event
    body = models.BinaryField()  # exactly the bytes signed and sent
    # The last attempt's signed unix seconds and signature (before the first: the
    # creation time, and no signature).
    timestamp = models.BigIntegerField()
    signature = models.CharField(max_length=100)
    status = models.CharField(max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    response_code = models.PositiveIntegerField(null=True, blank=True)  # of the last attempt
    last_error = models.CharField(max_length=500, blank=True, default="")
    # While pending: when the next attempt is due (set at creation; during an attempt,
    # when it counts as lost). The sweep queues again what is overdue. None once finished.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    redelivery_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "playground_webhookdelivery"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["endpoint", "-created_at"]),
                   # The sweep's scan: pending rows only, by due time.
                   models.Index(fields=["next_attempt_at"], condition=models.Q(status="pending"),
                                name="webhook_delivery_pending_due")]
