"""Request shapes (types only: ranges and rules live in services) and
response shapes for the prompt API."""

from django.conf import settings
from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from inference_protocol.validation import SEED_MAX

from .models import Label, LabelMove, Prompt, PromptVersion


class PromptSerializer(serializers.ModelSerializer):
    class Meta:
        model = Prompt
        fields = ["id", "title", "description", "version_count", "created_at", "updated_at"]
        read_only_fields = ["id", "version_count", "created_at", "updated_at"]


class BodyUploadSerializer(serializers.Serializer):
    upload = serializers.CharField(help_text="The `upload` handle returned by the presign call.")
    sha256 = serializers.RegexField(r"^[0-9a-fA-F]{64}$", help_text="SHA-256 (hex) of the uploaded bytes.")


# A text with something in it besides whitespace (a body; the service says empty_body too).
NOT_BLANK = RegexValidator(r"\S", "The text is empty.", code="empty_body")
_TEXT = {"type": "string"}
_CALL = {"type": "object", "required": ["function"], "properties": {
    "id": _TEXT, "type": {"type": "string", "enum": ["function"]},
    "function": {"type": "object", "required": ["name", "arguments"],
                 "properties": {"name": _TEXT, "arguments": _TEXT}}}}


def _turn(role: str, required: list[str], **extra) -> dict:
    return {"type": "object", "additionalProperties": False, "required": ["role", "content", *required],
            "properties": {"role": {"type": "string", "enum": [role]}, "content": _TEXT, **extra}}


@extend_schema_field({"type": "array", "maxItems": settings.PROMPT_MAX_MESSAGES, "items": {"oneOf": [
    _turn("user", []), _turn("system", []),
    _turn("assistant", [], tool_calls={"type": "array", "minItems": 1, "items": _CALL}),
    _turn("tool", ["tool_call_id"], tool_call_id={"type": "string", "minLength": 1})]}})
class TurnsField(serializers.JSONField):
    """A version's turns (checked by playground.validation.check_messages; the schema says the same)."""


class VersionCreateSerializer(serializers.Serializer):
    id = serializers.UUIDField(required=False, help_text="Optional client-chosen id.")
    parent = serializers.UUIDField(required=False, allow_null=True,
                                   help_text="The version this edit starts from (null only for the first).")
    merge_parent = serializers.UUIDField(required=False, allow_null=True, default=None,
                                         help_text="A merge: the other head merged into `parent`.")
    message = serializers.CharField(required=False, allow_blank=True, default="", trim_whitespace=False)
    branch = serializers.CharField(required=False, allow_blank=True, default="", help_text=(
        "A new branch this version starts (a name no version of the prompt has yet); empty: the "
        "parent's branch (main for the first version)."))
    model = serializers.CharField(required=False, help_text="A key of INFERENCE_MODELS.")
    temperature = serializers.FloatField(required=False, allow_null=True, default=None)
    max_tokens = serializers.IntegerField(required=False, allow_null=True, default=None)
    top_p = serializers.FloatField(required=False, allow_null=True, default=None)
    seed = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=0,
                                    max_value=SEED_MAX, help_text="A fixed sampling seed (null: none).")
    stop = serializers.ListField(child=serializers.CharField(trim_whitespace=False), required=False,
                                 default=list)
    system = serializers.CharField(required=False, allow_blank=True, default="", trim_whitespace=False)
    messages = TurnsField(required=False, default=list, help_text=(
        "The turns between the system text and the body, in order: [{\"role\": \"user\" | \"assistant\" | "
        "\"tool\" | \"system\", \"content\": template}]; an assistant turn may hold tool_calls, a tool turn "
        "its tool_call_id. The body is the last user message."))
    body = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False,
                                 validators=[NOT_BLANK],
                                 help_text="The message template, inline. Large bodies: use body_upload.")
    body_upload = BodyUploadSerializer(required=False)
    variables = serializers.DictField(child=serializers.CharField(allow_null=True, trim_whitespace=False),
                                      required=False, default=dict,
                                      help_text="Declared variables: name -> default (null: required).")
    response_schema = serializers.JSONField(required=False, allow_null=True, default=None)
    tool_choice = serializers.JSONField(required=False, allow_null=True, default=None, help_text=(
        "With tools: null (auto), \"none\", \"required\" or {\"type\": \"function\", \"function\": "
        "{\"name\"}}, as /v1 takes it."))
    tools = serializers.JSONField(required=False, default=list, help_text=(
        "Function tools in OpenAI's shape: [{\"type\": \"function\", \"function\": {\"name\", "
        "\"description\", \"parameters\"}}], checked as /v1 checks `tools`."))


class VersionSerializer(serializers.ModelSerializer):
    model = serializers.CharField(source="model_name")
    author = serializers.CharField(source="author.username", read_only=True, allow_null=True)
    body = serializers.SerializerMethodField(
        help_text="The body, when it is at most PROMPT_INLINE_MAX_BYTES; else null: fetch body_url.")
    body_url = serializers.SerializerMethodField()

    class Meta:
        model = PromptVersion
        fields = ["id", "prompt", "parent", "merge_parent", "number", "depth", "author", "created_at",
                  "message", "branch", "model", "temperature", "max_tokens", "top_p", "seed", "stop",
                  "system",
                  "messages", "variables", "response_schema", "tools", "tool_choice",
                  "body_size", "body_sha256", "storage", "chain_length", "body", "body_url"]

    def get_body(self, obj) -> str | None:
        from .bodies import body_text

        if not self.context.get("with_body") or obj.body_size > settings.PROMPT_INLINE_MAX_BYTES:
            return None
        return body_text(obj)

    def get_body_url(self, obj) -> str:
        return f"/api/prompts/{obj.prompt_id}/versions/{obj.pk}/body"


class TreeNodeSerializer(serializers.ModelSerializer):
    model = serializers.CharField(source="model_name")
    children = serializers.SerializerMethodField()
    labels = serializers.SerializerMethodField()

    class Meta:
        model = PromptVersion
        fields = ["id", "parent", "merge_parent", "children", "depth", "number", "created_at", "message",
                  "branch", "model", "body_size", "labels"]

    def get_children(self, obj) -> list[str]:
        return [str(c) for c in self.context["children"].get(obj.pk, [])]

    def get_labels(self, obj) -> list[str]:
        return self.context["labels"].get(obj.pk, [])


class RenderSerializer(serializers.Serializer):
    variables = serializers.JSONField(required=False, default=dict,
                                      help_text="name -> value (string or number)")


class LabelSerializer(serializers.ModelSerializer):
    version = serializers.UUIDField(source="version_id")
    split = serializers.JSONField(read_only=True, help_text="[{version, weight}] of an A/B split, or null")

    class Meta:
        model = Label
        fields = ["name", "version", "split", "protected", "require_approval", "updated_at"]


class LabelListSerializer(LabelSerializer):
    """A label in the list: also who moved it last and when (null: its mover's account is gone)."""

    moved_by = serializers.CharField(read_only=True, allow_null=True)
    moved_at = serializers.DateTimeField(read_only=True, allow_null=True)

    class Meta(LabelSerializer.Meta):
        fields = [*LabelSerializer.Meta.fields, "moved_by", "moved_at"]


class LabelProtectRequestSerializer(serializers.Serializer):
    protected = serializers.BooleanField()
    require_approval = serializers.BooleanField(required=False, default=False)


class PendingDecideRequestSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=500)
    eval_run = serializers.UUIDField(required=False, allow_null=True, default=None, help_text=(
        "Approvals of a gated label: the evaluation run the gate checks (default: the request's)"))


class PendingCreateRequestSerializer(serializers.Serializer):
    version = serializers.UUIDField(help_text="The version the label would move to")
    expected = serializers.UUIDField(help_text="The version the label holds now (else 409 label_conflict)")
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=500,
                                 help_text="Why: what the reviewers read")


class PendingMoveSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    label = serializers.CharField(source="label.name")
    from_version = serializers.UUIDField(source="from_version_id", allow_null=True)
    to_version = serializers.UUIDField(source="to_version_id")
    eval_run = serializers.CharField()
    status = serializers.CharField()
    requested_by = serializers.CharField(source="requested_by.username", read_only=True, allow_null=True)
    decided_by = serializers.CharField(source="decided_by.username", read_only=True, allow_null=True)
    created_at = serializers.DateTimeField()
    decided_at = serializers.DateTimeField(allow_null=True)
    reason = serializers.CharField()
    note = serializers.CharField()


class LabelSplitRequestSerializer(serializers.Serializer):
    variants = serializers.JSONField(
        help_text="[{\"version\": id, \"weight\": int}, ...], weights adding up to 100")
    expected = serializers.UUIDField(allow_null=True, help_text=(
        "The version the label holds now (its first variant when split; null: the label must not exist)"))


class LabelMoveRequestSerializer(serializers.Serializer):
    version = serializers.UUIDField()
    expected = serializers.UUIDField(allow_null=True, help_text=(
        "The version the label must hold now (null: the label must not exist yet); "
        "otherwise 409 with current_version."))


class LabelStepRequestSerializer(serializers.Serializer):
    expected = serializers.UUIDField(required=False, allow_null=True, default=None)


class LabelMoveSerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor.username", read_only=True, allow_null=True)

    class Meta:
        model = LabelMove
        fields = ["id", "kind", "from_version", "to_version", "actor", "created_at"]


class UploadRequestSerializer(serializers.Serializer):
    size = serializers.IntegerField(help_text="Exact size in bytes of the body to upload.")


class UploadSerializer(serializers.Serializer):
    upload = serializers.CharField()
    url = serializers.CharField()
    method = serializers.CharField()
    headers = serializers.DictField(child=serializers.CharField())
    size = serializers.IntegerField()
    expires_in = serializers.IntegerField()


class MergePreviewRequestSerializer(serializers.Serializer):
    ours = serializers.UUIDField(help_text="The head merged into (the merge's first parent)")
    theirs = serializers.UUIDField(help_text="The head merged in (the second parent)")


class TransferSerializer(serializers.Serializer):
    username = serializers.CharField()
    keep_access = serializers.BooleanField(default=True, help_text="Keep an editor grant for the old owner")


class ForkSerializer(serializers.Serializer):
    version = serializers.UUIDField()
    title = serializers.CharField(required=False, allow_blank=True, default="")


class ForkedPromptSerializer(PromptSerializer):
    class Meta(PromptSerializer.Meta):
        fields = [*PromptSerializer.Meta.fields, "forked_from_prompt", "forked_from_version"]


class SharedPromptSerializer(PromptSerializer):
    owner = serializers.CharField(source="owner.username")
    role = serializers.SerializerMethodField()

    class Meta(PromptSerializer.Meta):
        fields = [*PromptSerializer.Meta.fields, "owner", "role"]

    def get_role(self, obj) -> str:
        return "editor" if obj.is_editor else "viewer"


class TransferOfferSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    prompt = serializers.UUIDField(source="prompt_id", read_only=True)
    title = serializers.CharField(source="prompt.title", read_only=True)
    from_user = serializers.CharField(source="from_user.username", read_only=True)
    to_user = serializers.CharField(source="to_user.username", read_only=True)
    keep_access = serializers.BooleanField(read_only=True)
    created_at = serializers.DateTimeField(read_only=True)


class TransferAnswerSerializer(serializers.Serializer):
    accept = serializers.BooleanField()
