"""Online evaluation (evals.online) over the API:

    GET/POST     /api/prompts/<id>/online-evals              the prompt's rules; a new one
    PATCH/DELETE /api/prompts/<id>/online-evals/<rule_id>    change or delete one
    GET          /api/prompts/<id>/versions/<vid>/online-scores   a version's online scores

Viewers read (a share link's holder sees neither: the scores come from the
generations log, which is for accounts); editors manage rules. Rule changes
are in the prompt's audit log (online_eval.created, .changed, .deleted).
"""

from __future__ import annotations

import datetime

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response

from core.error_codes import DomainError
from core.jsonbody import validated
from playground import selectors as prompt_selectors
from playground.api import PromptScopedApi
from playground.permissions import request_access
from sharing.kinds import Role

from .evaluators import NAME, evaluator_list
from .models import OnlineEvalRule
from .online import rule_counts, rule_create, rule_delete, rule_update, version_online_figures

COUNTS_DAYS = 1  # a rule's counters in the list: the last day's


def _for_account(request, prompt_id):
    """The prompt, for an account that may view it (a share link's holder: 403)."""
    prompt = request_access(request, prompt_id=prompt_id, need="view")
    if prompt.access_role < Role.VIEWER:
        raise DomainError("A share link does not show online evaluation.", code="forbidden")
    return prompt


class OnlineEvalRuleSerializer(serializers.ModelSerializer):
    counts = serializers.SerializerMethodField(help_text=(
        "Generations sampled, skipped (failed generations), scored, failed and lost (never queued) in the "
        "last day."))

    class Meta:
        model = OnlineEvalRule
        fields = ["id", "key", "evaluator", "sample_rate", "label", "version", "enabled", "created_by",
                  "created_at", "counts"]

    def get_counts(self, rule) -> dict[str, int]:
        return rule_counts(rule, since=timezone.now() - datetime.timedelta(days=COUNTS_DAYS))


# The evaluators a rule may name: none that compares with an expected output but
# `contains` (its own `value`); each one's arguments are checked by the evaluator.
USABLE = [e.name for e in evaluator_list() if not e.needs_expected or e.name == "contains"]


@extend_schema_field({"oneOf": [
    {"type": "string", "enum": USABLE},
    {"type": "object", "required": ["name"], "additionalProperties": False, "properties": {
        "name": {"type": "string", "enum": USABLE}, "args": {"type": "object"},
        "as": {"type": "string", "pattern": NAME.pattern}}}]})
class EvaluatorField(serializers.JSONField):
    pass


class OnlineEvalRuleRequestSerializer(serializers.Serializer):
    evaluator = EvaluatorField(help_text='An evaluator name, or {"name", "args", "as"} as a run takes them; '
                                         "none that needs an expected output.")
    sample_rate = serializers.FloatField(min_value=0.0, max_value=1.0,
                                         help_text="The share of generations scored (0..1).")
    label = serializers.CharField(max_length=63, required=False, allow_blank=True, default="",
                                  help_text="Only generations run through this label (default: any).")
    version = serializers.UUIDField(required=False, allow_null=True, default=None,
                                    help_text="Only this version's generations (default: every version).")
    enabled = serializers.BooleanField(required=False, default=True)


class OnlineEvalRuleUpdateSerializer(OnlineEvalRuleRequestSerializer):
    evaluator = EvaluatorField(required=False)
    sample_rate = serializers.FloatField(min_value=0.0, max_value=1.0, required=False)
    label = serializers.CharField(max_length=63, required=False, allow_blank=True)
    version = serializers.UUIDField(required=False, allow_null=True)
    enabled = serializers.BooleanField(required=False)


class OnlineEvalListApi(PromptScopedApi):
    @extend_schema(responses=OnlineEvalRuleSerializer(many=True), description="The prompt's online "
                   "evaluation rules, with their counters.")
    def get(self, request, prompt_id):
        prompt = _for_account(request, prompt_id)
        rules = OnlineEvalRule.objects.filter(prompt=prompt)
        return Response(OnlineEvalRuleSerializer(rules, many=True).data)

    @extend_schema(request=OnlineEvalRuleRequestSerializer, responses={201: OnlineEvalRuleSerializer},
                   description="Score a sampled share of the prompt's production generations with an "
                               "evaluator (a judge calls its model for each: that is its cost).")
    def post(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="edit")
        v = validated(OnlineEvalRuleRequestSerializer, request)
        rule = rule_create(prompt=prompt, user=request.user, evaluator=v["evaluator"],
                           sample_rate=v["sample_rate"], label=v["label"], version_id=v["version"],
                           enabled=v["enabled"])
        return Response(OnlineEvalRuleSerializer(rule).data, status=status.HTTP_201_CREATED)


class OnlineEvalDetailApi(PromptScopedApi):
    @extend_schema(request=OnlineEvalRuleUpdateSerializer, responses=OnlineEvalRuleSerializer,
                   description="Change a rule: its rate, filter, evaluator, or enabled.")
    def patch(self, request, prompt_id, rule_id):
        prompt = request_access(request, prompt_id=prompt_id, need="edit")
        serializer = OnlineEvalRuleUpdateSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        rule = rule_update(prompt=prompt, rule_id=rule_id, user=request.user,
                           changes=dict(serializer.validated_data))
        return Response(OnlineEvalRuleSerializer(rule).data)

    @extend_schema(responses={204: None}, description="Delete a rule and its scores.")
    def delete(self, request, prompt_id, rule_id):
        prompt = request_access(request, prompt_id=prompt_id, need="edit")
        rule_delete(prompt=prompt, rule_id=rule_id, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


SCORE_PARAMS = {"days", "bucket"}


class VersionOnlineScoresApi(PromptScopedApi):
    @extend_schema(parameters=[OpenApiParameter("days", {"type": "integer", "minimum": 1, "maximum": 90}),
                               OpenApiParameter("bucket", {"type": "string", "enum": ["hour", "day"]})],
                   responses=OpenApiTypes.OBJECT,
                   description="Per evaluator key, the version's online scores over the window: count, "
                               "mean and its 95% bootstrap interval, pass rate, unscored (failed) count, "
                               "and the same per time bucket.")
    def get(self, request, prompt_id, version_id):
        unknown = sorted(set(request.query_params) - SCORE_PARAMS)
        if unknown:
            raise DomainError(f"Unrecognized query parameter: {unknown[0]}.", code="unknown_parameter",
                              field=unknown[0])
        prompt = _for_account(request, prompt_id)
        version = prompt_selectors.version_get(prompt=prompt, version_id=version_id)
        days = request.query_params.get("days", "7")
        if not days.isdigit() or not 1 <= int(days) <= 90:
            raise DomainError("days must be a whole number from 1 to 90.", code="invalid_value", field="days")
        bucket = request.query_params.get("bucket") or ("hour" if int(days) <= 7 else "day")
        if bucket not in ("hour", "day"):
            raise DomainError("bucket must be one of hour, day.", code="invalid_value", field="bucket")
        until = timezone.now()
        since = until - datetime.timedelta(days=int(days))
        return Response({"version": str(version.pk), "since": since, "until": until, "bucket": bucket,
                         "scores": version_online_figures(version_id=version.pk, since=since, until=until,
                                                          bucket=bucket)})
