"""Prompts, immutable versions (a tree by parent pointer), labels and blobs.

A version's content never changes: `PromptVersion.save()` refuses updates,
its queryset refuses `update()`, and on PostgreSQL a trigger (migration 0001)
rejects any UPDATE of its content columns.
"""

import uuid

from django.conf import settings
from django.db import models


class ImmutableVersionError(Exception):
    """Raised when code tries to change a saved PromptVersion."""


class Prompt(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="prompts")
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    # Allocates per-prompt version numbers; its row lock is held only for the
    # instant of one insert, so concurrent edits both succeed (a branch).
    version_count = models.PositiveIntegerField(default=0)
    # Set on a fork: the prompt and version it was copied from.
    forked_from_prompt = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                           related_name="forks")
    forked_from_version = models.ForeignKey("PromptVersion", null=True, blank=True,
                                            on_delete=models.SET_NULL, related_name="forks")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [models.Index(fields=["owner", "-updated_at"])]

    def __str__(self):
        return self.title


class Blob(models.Model):
    """An object in the store, keyed by the SHA-256 of its bytes (verified by
    the server before any version may reference it)."""

    sha256 = models.CharField(max_length=64, primary_key=True)
    size = models.BigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    @property
    def key(self) -> str:
        return f"sha256/{self.sha256}"

    def __str__(self):
        return self.key


class Storage(models.TextChoices):
    FULL = "full", "Full snapshot"
    DELTA = "delta", "Diff against parent"


class PromptVersionQuerySet(models.QuerySet):
    # Only the author pointer may be cleared (when an account is deleted).
    _mutable = frozenset({"author"})

    def update(self, **kwargs):
        if set(kwargs) - self._mutable:
            raise ImmutableVersionError("prompt versions are immutable")
        return super().update(**kwargs)

    def bulk_update(self, objs, fields, *args, **kwargs):
        raise ImmutableVersionError("prompt versions are immutable")


class PromptVersion(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, related_name="versions")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE,
                               related_name="children")
    # A merge: the second parent (the head merged into `parent`); None for an edit.
    merge_parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE,
                                     related_name="merge_children")
    number = models.PositiveIntegerField()  # 1, 2, ... per prompt, in creation order
    depth = models.PositiveIntegerField()  # edges from the root
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                               related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    message = models.TextField(blank=True, default="")
    branch = models.CharField(max_length=63, default="main")  # playground.branches

    model_name = models.CharField(max_length=100)
    temperature = models.FloatField(null=True, blank=True)
    max_tokens = models.PositiveIntegerField(null=True, blank=True)
    top_p = models.FloatField(null=True, blank=True)
    seed = models.BigIntegerField(null=True, blank=True)
    stop = models.JSONField(default=list, blank=True)
    system = models.TextField(blank=True, default="")
    # The turns between the system text and the body, in order: [{"role", "content", ...}]
    # (templates like the body; an assistant turn may hold tool_calls, a tool turn its tool_call_id).
    messages = models.JSONField(default=list, blank=True)
    variables = models.JSONField(default=dict, blank=True)  # name -> default (str) or None
    response_schema = models.JSONField(null=True, blank=True)
    # Function tools in OpenAI's shape ([{"type": "function", "function": {...}}]), as saved.
    tools = models.JSONField(default=list, blank=True)
    # With tools: None (auto), "none", "required" or {"type": "function", "function": {"name"}}.
    tool_choice = models.JSONField(null=True, blank=True)

    # The body (the message template), always described by its full size and hash.
    body_size = models.BigIntegerField()
    body_sha256 = models.CharField(max_length=64)
    # How it is stored: a full snapshot or a diff against the parent's body;
    # the payload lives inline (payload_inline) or in the store (payload_blob).
    storage = models.CharField(max_length=8, choices=Storage.choices)
    chain_length = models.PositiveIntegerField(default=0)  # diffs since the last snapshot
    payload_inline = models.BinaryField(null=True, blank=True)
    payload_blob = models.ForeignKey(Blob, null=True, blank=True, on_delete=models.PROTECT,
                                     related_name="+")

    objects = PromptVersionQuerySet.as_manager()

    class Meta:
        ordering = ["number"]
        constraints = [
            models.UniqueConstraint(fields=["prompt", "number"], name="uniq_prompt_version_number"),
            models.CheckConstraint(
                condition=(models.Q(payload_inline__isnull=True) ^ models.Q(payload_blob__isnull=True)),
                name="version_payload_exactly_one_place",
            ),
            models.CheckConstraint(
                condition=models.Q(storage="full", chain_length=0)
                | models.Q(storage="delta", parent__isnull=False, chain_length__gt=0),
                name="version_delta_has_parent",
            ),
        ]

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ImmutableVersionError("prompt versions are immutable; create a child instead")
        super().save(*args, **kwargs)

    def __str__(self):
        return f"{self.prompt_id} v{self.number}"


LABEL_NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,62}$"


class Label(models.Model):
    """A named, movable pointer to one version of a prompt."""

    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, related_name="labels")
    name = models.CharField(max_length=63)
    # CASCADE, not PROTECT: versions go only when their whole prompt is deleted,
    # and PROTECT would block that cascade.
    version = models.ForeignKey(PromptVersion, on_delete=models.CASCADE, related_name="labels")
    # An A/B split (playground.splits): [{"version": id, "weight": int}, ...] adding up
    # to 100, `version` being the first; None: the label points at `version` alone.
    split = models.JSONField(null=True, blank=True)
    # Protected: only editors move it, only the owner removes it or changes this;
    # with require_approval, a move is a request that a second editor approves.
    protected = models.BooleanField(default=False)
    require_approval = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["prompt", "name"], name="uniq_prompt_label")]

    def __str__(self):
        return self.name


class MoveKind(models.TextChoices):
    MOVE = "move", "Move"
    UNDO = "undo", "Undo"
    REDO = "redo", "Redo"


class LabelMove(models.Model):
    """Append-only history: who moved which label from where to where."""

    label = models.ForeignKey(Label, on_delete=models.CASCADE, related_name="moves")
    kind = models.CharField(max_length=4, choices=MoveKind.choices, default=MoveKind.MOVE)
    # For undo: the move it reverts; for redo: the undo it reverts.
    reverts = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    from_version = models.ForeignKey(PromptVersion, null=True, on_delete=models.CASCADE, related_name="+")
    to_version = models.ForeignKey(PromptVersion, on_delete=models.CASCADE, related_name="+")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                              related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]


class PendingStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class PendingLabelMove(models.Model):
    """A requested move of a label (a review request): a second editor approves or
    rejects it. Every move of a label that requires approval is one."""

    label = models.ForeignKey(Label, on_delete=models.CASCADE, related_name="pending_moves")
    from_version = models.ForeignKey(PromptVersion, null=True, on_delete=models.CASCADE, related_name="+")
    to_version = models.ForeignKey(PromptVersion, on_delete=models.CASCADE, related_name="+")
    # The run the gate checked: the request's require_eval, or the one its approver picked.
    eval_run = models.CharField(max_length=64, blank=True, default="")
    note = models.CharField(max_length=500, blank=True, default="")  # the requester's why
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                     related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=8, choices=PendingStatus.choices, default=PendingStatus.PENDING)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    reason = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        ordering = ["-id"]


class RunStatus(models.TextChoices):
    OK = "ok", "Ok"
    ERROR = "error", "Error"
    CANCELLED = "cancelled", "Cancelled"


class PlaygroundRun(models.Model):
    """One run of the playground page, as the server sent it (playground.runs)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # None: a run of the user's scratch draft (no prompt yet), seen only by that user.
    prompt = models.ForeignKey(Prompt, null=True, blank=True, on_delete=models.CASCADE, related_name="runs")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # The version that ran; for a draft, the version it was edited from (or None).
    version = models.ForeignKey(PromptVersion, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="+")
    draft = models.JSONField(null=True, blank=True)  # {"system", "messages", "body"} of a draft, else None
    variables = models.JSONField(default=dict)
    params = models.JSONField(default=dict)  # model, temperature, ..., tools, response_format as sent
    model = models.CharField(max_length=100)
    output = models.TextField(blank=True, default="")
    output_size = models.PositiveIntegerField(default=0)  # characters before the cap
    output_truncated = models.BooleanField(default=False)
    tool_calls = models.JSONField(null=True, blank=True)
    parsed = models.JSONField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    ttft_ms = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=9, choices=RunStatus.choices)
    error_code = models.CharField(max_length=64, blank=True, default="")
    request_id = models.CharField(max_length=64, blank=True, default="")
    search_text = models.TextField(blank=True, default="")  # variable values, for ?q=
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["prompt", "-created_at"]),
                   models.Index(fields=["prompt", "user", "-created_at"]),
                   models.Index(fields=["user", "-created_at"], condition=models.Q(prompt__isnull=True),
                                name="playground_scratch_runs")]


class ScratchDraft(models.Model):
    """A user's scratch playground: the editor's state before it is a prompt
    (the page keeps it here as it is typed; "Save as prompt" makes it one)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True,
                                related_name="+")
    state = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)
