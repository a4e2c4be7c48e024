"""Datasets, their immutable versions and rows; evaluation runs, their columns
and per-cell results; label gates. They name playground's prompt models by
"playground.<Model>" (no import of that app's models).

A dataset version never changes: an edit (a row added, changed or removed, an
import) makes a child version with a copy of the rows. A run keeps the dataset
version and every column's prompt version by id, so it reads the same months later:
those references are RESTRICT, so what a run used goes only together with the run
(an account deleted with its datasets, prompts and runs), never from under it.
"""

import uuid

from django.conf import settings
from django.db import models

# Tables keep the names they had in the playground app (Meta.db_table): an upgrade renames nothing.


class ImmutableRecordError(Exception):
    """Raised when code tries to change a saved dataset version or row."""


class _InsertOnly(models.Model):
    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ImmutableRecordError(f"{type(self).__name__} is immutable; make a new version")
        super().save(*args, **kwargs)


class Dataset(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="datasets")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    version_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "playground_dataset"
        ordering = ["-updated_at", "-id"]
        indexes = [models.Index(fields=["owner", "-updated_at"])]

    def __str__(self):
        return self.name


class DatasetVersion(_InsertOnly):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="versions")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    number = models.PositiveIntegerField()
    message = models.TextField(blank=True, default="")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                               related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    row_count = models.PositiveIntegerField(default=0)
    # Every variable name used by some row, sorted (for previews and run checks).
    variables = models.JSONField(default=list)

    class Meta:
        db_table = "playground_datasetversion"
        ordering = ["number"]
        constraints = [models.UniqueConstraint(fields=["dataset", "number"], name="uniq_dataset_version")]

    def __str__(self):
        return f"{self.dataset_id} v{self.number}"


class DatasetRow(_InsertOnly):
    """One test case: variable values, an optional expected output, metadata.
    `key` is stable across versions (an edited row keeps its key), so results of
    two runs over two versions line up row by row."""

    version = models.ForeignKey(DatasetVersion, on_delete=models.CASCADE, related_name="rows")
    index = models.PositiveIntegerField()  # 0, 1, ... within the version
    key = models.UUIDField(default=uuid.uuid4)
    variables = models.JSONField(default=dict)
    expected = models.TextField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "playground_datasetrow"
        ordering = ["index"]
        constraints = [models.UniqueConstraint(fields=["version", "index"], name="uniq_dataset_row_index")]


class DatasetImport(models.Model):
    """A large upload imported in the background: its bytes wait in the object
    store (imports/<id>) until a driver parses them into a new version."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="imports")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                               related_name="+")
    fmt = models.CharField(max_length=8)
    replace = models.BooleanField(default=False)
    skip_invalid = models.BooleanField(default=False)
    base = models.ForeignKey("DatasetVersion", null=True, on_delete=models.CASCADE, related_name="+")
    message = models.TextField(blank=True, default="")
    size = models.BigIntegerField()
    # queued -> parsing -> writing -> done | failed
    status = models.CharField(max_length=8, default="queued")
    lines_total = models.PositiveIntegerField(default=0)
    lines_done = models.PositiveIntegerField(default=0)
    valid = models.PositiveIntegerField(default=0)
    error_count = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list)
    error_code = models.CharField(max_length=64, blank=True, default="")
    error_message = models.TextField(blank=True, default="")
    version = models.ForeignKey("DatasetVersion", null=True, on_delete=models.SET_NULL, related_name="+")
    # The driver parsing it (core.jobs): an import whose lease ran out resumes.
    lease_until = models.DateTimeField(null=True, blank=True)
    lease_owner = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "playground_datasetimport"

    @property
    def object_key(self) -> str:
        return f"imports/{self.pk}"


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    CANCELLED = "cancelled", "Cancelled"


class EvalRun(models.Model):
    """What was run (dataset version, columns, evaluators: all frozen at
    creation) and how far it got. Only progress and status change."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="eval_runs")
    dataset_version = models.ForeignKey(DatasetVersion, on_delete=models.RESTRICT, related_name="runs")
    name = models.CharField(max_length=200, blank=True, default="")
    # [{"name", "version", "args"}], as resolved when the run was created.
    evaluators = models.JSONField(default=list)
    # How many times each row runs through each column (sampling draws again each time: the
    # summary's spread across repeats says how stable a row's score is).
    repeats = models.PositiveSmallIntegerField(default=1)
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED)
    total = models.PositiveIntegerField(default=0)      # rows x columns x repeats
    completed = models.PositiveIntegerField(default=0)  # cells with a result (output or error)
    failed = models.PositiveIntegerField(default=0)     # cells whose generation failed
    # The driver holding the run renews this; a run whose lease ran out while
    # not finished is picked up again (a crashed server or driver).
    lease_until = models.DateTimeField(null=True, blank=True)
    lease_owner = models.CharField(max_length=64, blank=True, default="")
    cancel_requested = models.BooleanField(default=False)
    summary = models.JSONField(default=dict, blank=True)  # per-column aggregates once done
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "playground_evalrun"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "-created_at"]),
                   models.Index(fields=["status", "lease_until"])]


class EvalColumn(models.Model):
    """One (prompt version, model, parameters) combination of a run."""

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="columns")
    index = models.PositiveIntegerField()
    prompt_version = models.ForeignKey("playground.PromptVersion", on_delete=models.RESTRICT,
                                       related_name="+")
    model_name = models.CharField(max_length=100)
    # The chat-completions sampling fields the column sends (the version's, with overrides).
    params = models.JSONField(default=dict)

    class Meta:
        db_table = "playground_evalcolumn"
        ordering = ["index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="uniq_eval_column")]


class EvalResult(models.Model):
    """One cell: a row through a column (one repeat of it). Written once (unique
    per cell), so a resumed run never stores a cell twice."""

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    column = models.ForeignKey(EvalColumn, on_delete=models.CASCADE, related_name="results")
    row = models.ForeignKey(DatasetRow, on_delete=models.RESTRICT, related_name="+")
    row_index = models.PositiveIntegerField()
    repeat = models.PositiveSmallIntegerField(default=0)  # 0 .. run.repeats - 1
    output = models.TextField(blank=True, default="")
    # The calls the reply made, parsed ([{"name", "arguments"}]) when the version offers tools; else None.
    tool_calls = models.JSONField(null=True, blank=True)
    error_code = models.CharField(max_length=64, blank=True, default="")
    error_message = models.TextField(blank=True, default="")
    # evaluator name -> {"score": 0..1, "passed": bool, "reason": str}
    scores = models.JSONField(default=dict)
    passed = models.BooleanField(null=True)  # every evaluator passed (None: not scored, failed cell)
    latency_ms = models.PositiveIntegerField(null=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    # What served the cell, from the worker's terminal event: the name its scheduler
    # was loaded and declared ready under (model, or model@version). "": no worker
    # answered (a failed cell).
    served = models.CharField(max_length=200, blank=True, default="")
    # "exact" when the prompt cache answered (an identical greedy cell ran before), else "".
    cache_hit = models.CharField(max_length=10, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "playground_evalresult"
        ordering = ["row_index", "column_id", "repeat"]
        constraints = [models.UniqueConstraint(fields=["column", "row", "repeat"],
                                               name="uniq_eval_cell_repeat")]
        indexes = [models.Index(fields=["run", "row_index"])]


class LabelGate(models.Model):
    """A label that may move only behind a passing run: the candidate version
    must score within `margin` of the version the label holds now, on
    `dataset`, by `evaluator` (mean score, 0..1)."""

    prompt = models.ForeignKey("playground.Prompt", on_delete=models.CASCADE, related_name="label_gates")
    label_name = models.CharField(max_length=63)
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+")
    evaluator = models.CharField(max_length=64)
    margin = models.FloatField(default=0.0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "playground_labelgate"
        constraints = [models.UniqueConstraint(fields=["prompt", "label_name"], name="uniq_label_gate")]


class GateDecision(models.Model):
    """Every gated move attempt, passed or refused, with the figures and the run."""

    gate = models.ForeignKey(LabelGate, on_delete=models.CASCADE, related_name="decisions")
    run = models.ForeignKey(EvalRun, null=True, on_delete=models.SET_NULL, related_name="+")
    candidate_version = models.ForeignKey("playground.PromptVersion", on_delete=models.CASCADE,
                                          related_name="+")
    baseline_version = models.ForeignKey("playground.PromptVersion", null=True, on_delete=models.CASCADE,
                                         related_name="+")
    passed = models.BooleanField()
    code = models.CharField(max_length=64)
    reason = models.TextField()
    figures = models.JSONField(default=dict)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                              related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "playground_gatedecision"
        ordering = ["-id"]


class DatasetPin(models.Model):
    """A prompt's pinned dataset: each version saved on the prompt then runs
    over the dataset's newest version, beside its parent, with these
    evaluators (evals.pins)."""

    prompt = models.OneToOneField("playground.Prompt", on_delete=models.CASCADE, related_name="+")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+")
    evaluators = models.JSONField(default=list)  # as the run stores them (evaluators.check_evaluators)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)


class OnlineEvalRule(models.Model):
    """A share of a prompt's production generations scored by one evaluator
    (evals.online): all its versions, or only those run through `label`, or
    only `version`'s. Which generations are scored is a hash of the rule and
    the generation (evals.online.sampled), so it never changes on a rerun."""

    prompt = models.ForeignKey("playground.Prompt", on_delete=models.CASCADE, related_name="online_rules")
    label = models.CharField(max_length=63, blank=True, default="")  # "": any label, and calls by id
    version = models.ForeignKey("playground.PromptVersion", null=True, blank=True, on_delete=models.CASCADE,
                                related_name="+")
    key = models.CharField(max_length=64)  # the evaluator's name, or its `as`: the scores' key
    evaluator = models.JSONField()  # {"key", "name", "version", "args"} (evaluators.check_evaluators)
    sample_rate = models.FloatField()  # 0..1
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["prompt", "enabled"], name="online_rule_prompt")]


class OnlineScore(models.Model):
    """One rule's score of one generation (a plain id: scores outlive the log's
    retention). `score` None: the generation could not be scored (`error`)."""

    rule = models.ForeignKey(OnlineEvalRule, on_delete=models.CASCADE, related_name="scores")
    generation_id = models.BigIntegerField()
    prompt_version = models.ForeignKey("playground.PromptVersion", on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=64)
    score = models.FloatField(null=True)
    passed = models.BooleanField(null=True)
    reason = models.TextField(blank=True, default="")
    error = models.CharField(max_length=64, blank=True, default="")
    generated_at = models.DateTimeField()  # the generation's time: windows and buckets read it
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rule", "generation_id"], name="uniq_online_score")]
        indexes = [models.Index(fields=["prompt_version", "generated_at"], name="online_score_version")]


class OnlineCount(models.Model):
    """Per rule and minute: generations sampled, skipped (a failed generation:
    nothing to score), scored, failed (the evaluator or judge could not score)
    and lost (never queued: the broker was away)."""

    rule = models.ForeignKey(OnlineEvalRule, on_delete=models.CASCADE, related_name="counts")
    minute = models.DateTimeField()
    sampled = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    scored = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    lost = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rule", "minute"], name="uniq_online_count")]
