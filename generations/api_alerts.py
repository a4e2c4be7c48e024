"""The regression alarm's API (generations.regression, generations.alerts):

    GET  /api/prompts/<id>/alerts                          open first, then newest first (a cursor page)
    POST /api/prompts/<id>/alerts/<alert_id>/rollback      move the label back to the previous version
    POST /api/prompts/<id>/alerts/<alert_id>/dismiss       leave the label, close the alert

Who: viewers of the prompt see its alerts (not a share link's holder: the
figures come from the generations log), editors act on them; to anyone else
the prompt does not exist (404 prompt_not_found).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from core.error_codes import DomainError
from core.pagination import Page, paginated
from playground.permissions import request_access

from .alerts import alert_dismiss, alert_list, alert_rollback
from .models import AlertStatus
from .regression import alert_payload
from .selectors import prompt_for_log


class AlertVersionSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    number = serializers.IntegerField()


class AlertSerializer(serializers.Serializer):
    """The schema of generations.regression.alert_payload."""

    id = serializers.IntegerField()
    label = serializers.CharField()
    check = serializers.CharField(help_text="error_rate, latency_p95, ttft_p50 or score:<evaluator>")
    status = serializers.ChoiceField(choices=AlertStatus.values)
    version = AlertVersionSerializer()
    previous_version = AlertVersionSerializer()
    value = serializers.FloatField(help_text="The new version's figure: a rate (0-1), milliseconds or a "
                                             "mean score")
    previous_value = serializers.FloatField()
    count = serializers.IntegerField(help_text="Samples of the new version behind the figure")
    previous_count = serializers.IntegerField()
    p_value = serializers.FloatField(help_text="One-sided")
    moved_at = serializers.DateTimeField()
    created_at = serializers.DateTimeField()
    resolved_at = serializers.DateTimeField(allow_null=True)
    resolved_by = serializers.CharField(allow_null=True)


class AlertListApi(APIView):
    permission_classes = [AllowAny]  # prompt_for_log decides
    pagination_class = Page  # the schema documents the cursor page paginated() answers

    @extend_schema(parameters=[OpenApiParameter("status", str, enum=AlertStatus.values,
                                                description="Only alerts in this state")],
                   responses=AlertSerializer(many=True),
                   description="The prompt's regression alerts: open ones first, then newest first.")
    def get(self, request, prompt_id):
        prompt = prompt_for_log(request, prompt_id=prompt_id)
        status = request.query_params.get("status", "")
        if status and status not in AlertStatus.values:
            raise DomainError(f"status must be one of {', '.join(AlertStatus.values)}.", code="invalid_value",
                              field="status")
        return paginated(request, self, alert_list(prompt=prompt, status=status), ("-is_open", "-id"),
                         lambda items: [alert_payload(a) for a in items])


def _act(request, prompt_id, alert_id, action):
    prompt = request_access(request, prompt_id=prompt_id, need="edit")
    return Response(alert_payload(action(prompt=prompt, alert_id=alert_id, actor=request.user)))


class AlertRollbackApi(APIView):
    permission_classes = [AllowAny]  # request_access decides

    @extend_schema(request=None, responses=AlertSerializer,
                   description="Editors: move the alert's label back to the previous version "
                               "(compare-and-set from the alert's version: 409 label_conflict if it moved "
                               "since), as a move would go (label_protected, approval_required, eval_* "
                               "refusals answer as they do there), and close the label's open alerts of "
                               "that version as rolled back. 409 alert_resolved if already closed.")
    def post(self, request, prompt_id, alert_id):
        return _act(request, prompt_id, alert_id, alert_rollback)


class AlertDismissApi(APIView):
    permission_classes = [AllowAny]  # request_access decides

    @extend_schema(request=None, responses=AlertSerializer,
                   description="Editors: close the alert, leaving the label where it is. 409 "
                               "alert_resolved if already closed.")
    def post(self, request, prompt_id, alert_id):
        return _act(request, prompt_id, alert_id, alert_dismiss)
