"""Usage records (billing, shown to users) and per-key gateway preferences."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from core.insert_only import InsertOnlyModel


class UsageRecord(models.Model):
    """One completion request that reached generation or the cache (429s before
    admission are counted in metrics, not here: a burst must not cost a write)."""

    class Status(models.TextChoices):
        OK = "ok"
        ERROR = "error"
        CANCELLED = "cancelled"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="inference_usage")
    api_key = models.ForeignKey("accounts.ApiKey", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="usage")
    request_id = models.CharField(max_length=64, unique=True)
    model = models.CharField(max_length=100)
    # The model version that served it, where the config document names versions
    # (canary figures are per version): "" otherwise.
    version = models.CharField(max_length=100, blank=True, default="")
    tier = models.CharField(max_length=10)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    ttft_ms = models.PositiveIntegerField(null=True, blank=True)
    cache_hit = models.CharField(max_length=10, blank=True, default="")  # "", exact, semantic
    status = models.CharField(max_length=10, choices=Status.choices)
    error_code = models.CharField(max_length=64, blank=True, default="")
    # The caller's own end user, as sent in the request's `user` field.
    end_user = models.CharField(max_length=256, blank=True, default="")
    # The saved prompt version the request ran, when known: runs by reference, and
    # /v1 calls that name it (X-Prompt-Version, as the SDK sends): an A/B split's
    # outcomes compare per version from here.
    prompt_version = models.UUIDField(null=True, blank=True)
    prompt_label = models.CharField(max_length=63, blank=True, default="")
    # The evaluation run whose cell (or judge call) this was (inference_client.batch_lane):
    # a plain id, so usage outlives the run.
    eval_run = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "-created_at"]),
                   models.Index(fields=["user", "prompt_version"]),
                   models.Index(fields=["eval_run"], condition=models.Q(eval_run__isnull=False),
                                name="usage_eval_run")]


class ImmutableModelVersionError(Exception):
    pass


class ModelVersion(InsertOnlyModel):
    """A published checkpoint: immutable, like a prompt version (a PostgreSQL
    trigger refuses UPDATEs below the ORM too). ``manifest`` is the document
    workers read from the object store (inference_protocol.checkpoints), kept
    here byte for byte: ``manifest_sha256`` is the SHA-256 of its canonical JSON."""

    model = models.CharField(max_length=100)
    version = models.CharField(max_length=100)
    manifest = models.JSONField()
    manifest_sha256 = models.CharField(max_length=64)
    total_size = models.BigIntegerField()
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField()

    immutable_error = ImmutableModelVersionError
    immutable_message = "model versions are immutable; publish a new version"

    class Meta:
        ordering = ["model", "created_at"]
        constraints = [models.UniqueConstraint(fields=["model", "version"], name="uniq_model_version")]

    def __str__(self):
        return f"{self.model}@{self.version}"


class ImmutableConfigDocumentError(Exception):
    pass


class ConfigDocumentRecord(InsertOnlyModel):
    """A published config document (inference_protocol.config): numbered, signed,
    immutable (a PostgreSQL trigger refuses UPDATEs below the ORM too).
    ``document`` holds the exact signed JSON that was broadcast."""

    number = models.PositiveIntegerField(unique=True)
    parent = models.PositiveIntegerField(null=True)
    content = models.JSONField()
    digest = models.CharField(max_length=64)
    document = models.TextField()
    created_by = models.CharField(max_length=200)
    reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField()

    immutable_error = ImmutableConfigDocumentError
    immutable_message = "config documents are immutable; publish a new one"

    class Meta:
        ordering = ["-number"]
        # Publishing (the control page's actions: documents, rollouts, rollbacks)
        # needs this permission; staff alone may only look. Superusers have it.
        permissions = [("publish_config", "Can publish config documents and drive rollouts")]

    def __str__(self):
        return f"config document {self.number}"


class ControlEvent(models.Model):
    """The control plane's audit log (append-only): every published document,
    rollout step, promotion and rollback, with its reason and the figures that
    decided it (``detail``)."""

    action = models.CharField(max_length=32)
    target = models.CharField(max_length=200)
    actor_name = models.CharField(max_length=200, blank=True, default="")
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]


class Rollout(models.Model):
    """A canary rollout of one model version (inference_client.control.rollout).
    At most one is active per model (a partial unique constraint): a second
    operator's start is a conflict, not a race."""

    class State(models.TextChoices):
        WAITING = "waiting_for_ready"   # no worker has verified and loaded the version yet
        RUNNING = "running"
        PAUSED = "paused"
        PROMOTED = "promoted"
        ROLLED_BACK = "rolled_back"
        FAILED = "failed"               # gave up before shifting traffic (no ready worker)

    ACTIVE = (State.WAITING, State.RUNNING, State.PAUSED)

    model = models.CharField(max_length=100)
    version = models.CharField(max_length=100)
    stable_version = models.CharField(max_length=100)
    steps = models.JSONField()                      # canary percentages, e.g. [10, 50, 100]
    step_index = models.IntegerField(default=-1)    # the step now applied (-1: none yet)
    state = models.CharField(max_length=20, choices=State.choices, default=State.WAITING)
    requested = models.CharField(max_length=20, blank=True, default="")  # pause | resume | promote | rollback
    base_document = models.PositiveIntegerField()   # the document before the first step (rollback target)
    reason = models.TextField(blank=True, default="")
    figures = models.JSONField(default=dict, blank=True)  # the last window: canary vs stable
    # The process driving it (host:pid:random) and until when its lease runs
    # (renewed as it goes, ROLLOUT_LEASE_S): every write of the driver is
    # conditional on still holding it, so two drivers never both step.
    driver = models.CharField(max_length=200, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-id"]
        constraints = [models.UniqueConstraint(
            fields=["model"], condition=models.Q(state__in=["waiting_for_ready", "running", "paused"]),
            name="one_active_rollout_per_model")]

    @property
    def stale(self) -> bool:
        """Active, but no driver holds its lease (it died or hangs): resume or abort it."""
        return self.state in self.ACTIVE and (
            self.lease_expires_at is None or self.lease_expires_at <= timezone.now())

    def __str__(self):
        return f"rollout {self.pk}: {self.model}@{self.version} ({self.state})"


class BatchFile(models.Model):
    """A file of the Batch API (/v1/files): a batch's JSONL input, or its output
    and error files. The bytes are in the object store under ``blob_key``."""

    class Purpose(models.TextChoices):
        BATCH = "batch"
        BATCH_OUTPUT = "batch_output"

    id = models.CharField(primary_key=True, max_length=40)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="batch_files")
    purpose = models.CharField(max_length=20, choices=Purpose.choices)
    filename = models.CharField(max_length=255)
    bytes = models.PositiveBigIntegerField()
    lines = models.PositiveIntegerField(default=0)
    # The endpoint every line calls (inputs only; one per file).
    endpoint = models.CharField(max_length=40, blank=True, default="")
    # Estimated tokens of all its lines (prompt + max_tokens): a batch's enqueued tokens.
    tokens = models.PositiveBigIntegerField(default=0)
    blob_key = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)


class Batch(models.Model):
    """A Batch API job: every line of its input file runs once, at batch priority."""

    class Status(models.TextChoices):
        VALIDATING = "validating"
        IN_PROGRESS = "in_progress"
        FINALIZING = "finalizing"
        COMPLETED = "completed"
        FAILED = "failed"
        EXPIRED = "expired"
        CANCELLING = "cancelling"
        CANCELLED = "cancelled"

    id = models.CharField(primary_key=True, max_length=40)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="batches")
    api_key = models.ForeignKey("accounts.ApiKey", null=True, blank=True, on_delete=models.SET_NULL)
    # An ended batch keeps its input's id after the file is deleted (OpenAI's do), so
    # no database constraint; batch_files.file_delete refuses while the batch runs.
    input_file = models.ForeignKey(BatchFile, on_delete=models.DO_NOTHING, db_constraint=False,
                                   related_name="batches")
    output_file = models.ForeignKey(BatchFile, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    error_file = models.ForeignKey(BatchFile, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    endpoint = models.CharField(max_length=40)
    completion_window = models.CharField(max_length=10, default="24h")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.VALIDATING)
    total = models.PositiveIntegerField(default=0)
    completed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    metadata = models.JSONField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    lease_owner = models.CharField(max_length=64, blank=True, default="")
    lease_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    in_progress_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField()


class BatchLine(models.Model):
    """One finished line of a batch, stored once under its custom_id."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="lines")
    line = models.PositiveIntegerField()
    custom_id = models.CharField(max_length=512)
    request_id = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField()
    body = models.JSONField()       # the response body, or the error body

    class Meta:
        constraints = [models.UniqueConstraint(fields=["batch", "custom_id"], name="batch_line_once")]
