"""The generations log: one row per /v1 request that ran a saved prompt version
(generations.store writes them, in the usage writer's batches)."""

from django.conf import settings
from django.db import models


class Generation(models.Model):
    """What a saved version was asked and answered. The prompt and version are
    plain ids: a generation outlives neither visibly (its reads go through the
    prompt's access check, so one of a deleted prompt is a 404), and deleting a
    prompt never waits on its log."""

    id = models.BigAutoField(primary_key=True)
    request_id = models.CharField(max_length=64, unique=True)  # a record claimed twice is stored once
    prompt_id = models.UUIDField()
    version_id = models.UUIDField()
    label = models.CharField(max_length=63, blank=True, default="")  # "" when called by version id
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    api_key_id = models.BigIntegerField(null=True, blank=True)  # None: a browser session
    source = models.CharField(max_length=8)  # "run" (by reference) or "v1" (X-Prompt-Version)
    model = models.CharField(max_length=100)
    status = models.CharField(max_length=10)  # ok, error, cancelled (UsageRecord.Status)
    error_code = models.CharField(max_length=64, blank=True, default="")
    cache_hit = models.CharField(max_length=10, blank=True, default="")
    variables = models.JSONField(default=dict)
    messages = models.JSONField(null=True, blank=True)  # None: in the object store at messages_blob
    messages_blob = models.CharField(max_length=200, blank=True, default="")
    params = models.JSONField(default=dict)
    output = models.TextField(blank=True, default="")  # whole, or its head when output_blob is set
    output_size = models.PositiveIntegerField(default=0)  # characters of the whole output
    output_blob = models.CharField(max_length=200, blank=True, default="")
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    ttft_ms = models.PositiveIntegerField(null=True, blank=True)
    cost = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)  # None: no price
    search_text = models.TextField(blank=True, default="")  # lower-cased variables and output head, for ?q=
    created_at = models.DateTimeField(db_index=True)  # when the request ended

    class Meta:
        # Lists page by (created_at, id), newest first: a time filter is a range of these indexes.
        ordering = ["-created_at", "-id"]
        # A filter that matches few rows must not walk the whole prompt: one index per filter.
        indexes = [models.Index(fields=["version_id", "-created_at", "-id"], name="generation_version"),
                   models.Index(fields=["version_id", "label", "-created_at", "-id"],
                                name="generation_version_label"),
                   models.Index(fields=["prompt_id", "-created_at", "-id"], name="generation_prompt"),
                   models.Index(fields=["prompt_id", "label", "-created_at", "-id"], name="generation_label"),
                   models.Index(fields=["prompt_id", "status", "-created_at", "-id"],
                                name="generation_status"),
                   models.Index(fields=["prompt_id", "model", "-created_at", "-id"], name="generation_model")]


class AlertStatus(models.TextChoices):
    OPEN = "open", "Open"
    ROLLED_BACK = "rolled_back", "Rolled back"
    DISMISSED = "dismissed", "Dismissed"


class RegressionAlert(models.Model):
    """A check of the regression alarm (generations.regression) that fired on a
    label's move: the figures of the new version beside the previous one's."""

    id = models.BigAutoField(primary_key=True)
    prompt = models.ForeignKey("playground.Prompt", on_delete=models.CASCADE, related_name="+")
    label = models.CharField(max_length=63)
    version = models.ForeignKey("playground.PromptVersion", on_delete=models.CASCADE, related_name="+")
    previous_version = models.ForeignKey("playground.PromptVersion", on_delete=models.CASCADE,
                                         related_name="+")
    move_id = models.BigIntegerField()  # the LabelMove checked: each check fires once per move
    moved_at = models.DateTimeField()
    rule = models.CharField(max_length=100)  # the check: error_rate, latency_p95, ttft_p50, score:<name>
    value = models.FloatField()  # the new version's figure (a rate, milliseconds or a mean score)
    previous_value = models.FloatField()
    count = models.PositiveIntegerField()  # the samples behind each side
    previous_count = models.PositiveIntegerField()
    p_value = models.FloatField()
    status = models.CharField(max_length=12, choices=AlertStatus.choices, default=AlertStatus.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["prompt", "status", "-id"], name="regression_alert_prompt")]
        constraints = [
            models.UniqueConstraint(fields=["move_id", "rule"], name="uniq_regression_alert_move"),
            models.UniqueConstraint(fields=["prompt", "label", "version", "rule"],
                                    condition=models.Q(status="open"), name="uniq_regression_alert_open"),
        ]
