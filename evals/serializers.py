"""Evaluations API: request checks and response shapes (for the OpenAPI schema)."""

from django.conf import settings
from rest_framework import serializers

from .gate import run_url
from .models import Dataset, DatasetRow, DatasetVersion, EvalColumn, EvalRun, GateDecision, LabelGate
from .visibility import redact_evaluators


class DatasetSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    latest_version = serializers.SerializerMethodField()

    class Meta:
        model = Dataset
        fields = ["id", "name", "description", "owner", "version_count", "latest_version", "created_at",
                  "updated_at"]
        read_only_fields = ["id", "owner", "version_count", "created_at", "updated_at"]

    def get_latest_version(self, obj) -> str | None:
        version = obj.versions.order_by("-number").values_list("pk", flat=True).first()
        return str(version) if version else None


class DatasetCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    rows = serializers.ListField(child=serializers.JSONField(), required=False, default=list,
                                 help_text="Rows of the first version: {variables, expected, metadata}.")


class DatasetVersionSerializer(serializers.ModelSerializer):
    author = serializers.CharField(source="author.username", read_only=True, allow_null=True)

    class Meta:
        model = DatasetVersion
        fields = ["id", "dataset", "number", "parent", "message", "author", "created_at", "row_count",
                  "variables"]


class DatasetVersionCreateSerializer(serializers.Serializer):
    base = serializers.UUIDField(required=False, allow_null=True, default=None,
                                 help_text="The version edited (required once the dataset has one).")
    add = serializers.ListField(child=serializers.JSONField(), required=False, default=list)
    update = serializers.DictField(child=serializers.JSONField(), required=False, default=dict,
                                   help_text="row key -> the row's new content")
    delete = serializers.ListField(child=serializers.UUIDField(), required=False, default=list)
    message = serializers.CharField(required=False, allow_blank=True, default="")


class DatasetRowSerializer(serializers.ModelSerializer):
    class Meta:
        model = DatasetRow
        fields = ["index", "key", "variables", "expected", "metadata"]


class ImportRequestSerializer(serializers.Serializer):
    file = serializers.FileField(required=False, help_text="A CSV or JSONL file (multipart).")
    text = serializers.CharField(required=False, trim_whitespace=False,
                                 help_text="Or the file's text (JSON).")
    format = serializers.ChoiceField(choices=["csv", "tsv", "jsonl"], required=False,
                                     help_text="Default: from the file name.")
    base = serializers.UUIDField(required=False, allow_null=True, default=None)
    mode = serializers.ChoiceField(choices=["append", "replace"], default="append")
    dry_run = serializers.BooleanField(default=False, help_text="Preview: parse and report, write nothing.")
    skip_invalid = serializers.BooleanField(default=False,
                                           help_text="Import the valid rows, skip the others.")
    message = serializers.CharField(required=False, allow_blank=True, default="")


class ImportTextRequestSerializer(ImportRequestSerializer):
    """The JSON form: the rows as text, in a format it names (there is no file name to say it)."""

    file = None
    text = serializers.CharField(trim_whitespace=False, help_text="The file's text.")
    format = serializers.ChoiceField(choices=["csv", "tsv", "jsonl"])


class RowErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    code = serializers.CharField()
    message = serializers.CharField()
    field = serializers.CharField()


class ImportResultSerializer(serializers.Serializer):
    valid = serializers.IntegerField()
    errors = RowErrorSerializer(many=True)
    preview = serializers.ListField(child=serializers.JSONField())
    version = DatasetVersionSerializer(required=False, allow_null=True)


class DatasetUpdateSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)  # the service checks it
    description = serializers.CharField(required=False, allow_blank=True)


class EvaluatorSerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.IntegerField()
    doc = serializers.CharField()
    args = serializers.ListField(child=serializers.CharField())
    needs_expected = serializers.BooleanField()


class EvalColumnSerializer(serializers.ModelSerializer):
    """Needs context["visibility"] (visibility.visibility_for): a column whose prompt
    the reader may not view has its prompt and version fields null, redacted true."""

    prompt = serializers.UUIDField(source="prompt_version.prompt_id", allow_null=True)
    version = serializers.UUIDField(source="prompt_version_id", allow_null=True)
    version_number = serializers.IntegerField(source="prompt_version.number", allow_null=True)
    prompt_title = serializers.CharField(source="prompt_version.prompt.title", allow_null=True)
    redacted = serializers.BooleanField(read_only=True, help_text=(
        "You may not view this column's prompt: its ids, title, outputs and error messages are withheld."))

    class Meta:
        model = EvalColumn
        fields = ["index", "prompt", "prompt_title", "version", "version_number", "model_name", "params",
                  "redacted"]

    def to_representation(self, instance):
        if self.context["visibility"].column(instance):
            return {**super().to_representation(instance), "redacted": False}
        return {"index": instance.index, "prompt": None, "prompt_title": None, "version": None,
                "version_number": None, "model_name": instance.model_name, "params": instance.params,
                "redacted": True}


class EvalRunSerializer(serializers.ModelSerializer):
    """Needs context["visibility"] for the runs it serializes (visibility.visibility_for)."""

    dataset = serializers.UUIDField(source="dataset_version.dataset_id")
    dataset_name = serializers.CharField(source="dataset_version.dataset.name")
    dataset_version_number = serializers.IntegerField(source="dataset_version.number")
    owner = serializers.CharField(source="owner.username")
    columns = EvalColumnSerializer(many=True)

    class Meta:
        model = EvalRun
        fields = ["id", "name", "owner", "dataset", "dataset_name", "dataset_version",
                  "dataset_version_number",
                  "columns", "evaluators", "repeats", "status", "total", "completed", "failed",
                  "cancel_requested",
                  "summary", "created_at", "started_at", "finished_at"]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["evaluators"] = redact_evaluators(data["evaluators"], self.context["visibility"])
        return data


class EvalRunCreateSerializer(serializers.Serializer):
    dataset = serializers.UUIDField()
    dataset_version = serializers.UUIDField(required=False, allow_null=True, default=None,
                                            help_text="Default: the dataset's newest version.")
    columns = serializers.ListField(child=serializers.JSONField(), help_text=(
        "[{prompt, version | label, model?, params?: {temperature, max_tokens, top_p, stop}}]"))
    evaluators = serializers.ListField(child=serializers.JSONField(), required=False, default=list,
                                       help_text='["exact", {"name": "regex", "args": {"pattern": "..."}}]; '
                                                 'none (the default): outputs only, nothing scored')
    name = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    repeats = serializers.IntegerField(required=False, default=1, min_value=1,
                                       max_value=settings.EVAL_RUN_MAX_REPEATS, help_text=(
        "How many times each row runs through each column (1 to EVAL_RUN_MAX_REPEATS); the summary "
        "has the spread of each row's score across them."))


class ResultRowSerializer(serializers.Serializer):
    row_index = serializers.IntegerField()
    variables = serializers.JSONField()
    expected = serializers.CharField(allow_null=True)
    cells = serializers.ListField(child=serializers.JSONField())


class RowPageSerializer(serializers.Serializer):
    rows = DatasetRowSerializer(many=True)
    next = serializers.IntegerField(allow_null=True, help_text="`start` of the next page (null: the end).")
    row_count = serializers.IntegerField()


class ResultPageSerializer(serializers.Serializer):
    rows = ResultRowSerializer(many=True)
    next = serializers.IntegerField(allow_null=True, help_text="`start` of the next page (null: the end).")


class LabelGateSerializer(serializers.ModelSerializer):
    label = serializers.CharField(source="label_name", read_only=True)
    dataset_name = serializers.CharField(source="dataset.name", read_only=True)

    class Meta:
        model = LabelGate
        fields = ["label", "dataset", "dataset_name", "evaluator", "margin", "created_at"]


class LabelGateRequestSerializer(serializers.Serializer):
    dataset = serializers.UUIDField()
    evaluator = serializers.CharField(max_length=64)
    margin = serializers.FloatField(default=0.0)


class GateDecisionSerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor.username", read_only=True, allow_null=True)
    run_url = serializers.SerializerMethodField()

    class Meta:
        model = GateDecision
        fields = ["id", "passed", "code", "reason", "figures", "run", "run_url", "candidate_version",
                  "baseline_version", "actor", "created_at"]

    def get_run_url(self, obj) -> str | None:
        return f"/evals/runs/{obj.run_id}/" if obj.run_id else None


class GateRunSerializer(serializers.Serializer):
    """A run that can decide a gated move, and what the gate says of it now."""

    id = serializers.UUIDField(source="run.id")
    name = serializers.CharField(source="run.name")
    owner = serializers.CharField(source="run.owner.username")
    status = serializers.CharField(source="run.status")
    completed = serializers.IntegerField(source="run.completed")
    total = serializers.IntegerField(source="run.total")
    dataset_version_number = serializers.IntegerField(source="run.dataset_version.number")
    created_at = serializers.DateTimeField(source="run.created_at")
    url = serializers.SerializerMethodField()
    passed = serializers.BooleanField(source="verdict.passed",
                                      help_text="Whether the gate would let the move through now")
    code = serializers.CharField(source="verdict.code",
                                 help_text="eval_passed, or the eval_* code it would refuse with")
    reason = serializers.CharField(source="verdict.reason")
    figures = serializers.JSONField(source="verdict.figures")

    def get_url(self, obj) -> str:
        return run_url(obj["run"].pk)


class GateRunStartRequestSerializer(serializers.Serializer):
    version = serializers.UUIDField(help_text="The version the label would move to")
