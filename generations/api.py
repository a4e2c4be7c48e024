"""The generations log API:

    GET  /api/prompts/<id>/generations          the prompt's generations, newest first (filters below)
    GET  /api/prompts/<id>/versions/<vid>/generation-metrics   figures over time, beside the previous version
    GET  /api/generations/<id>                  one generation: variables, messages, parameters, output
    GET  /api/generations/<id>/output           its whole output (text/plain; a large one: the object store)
    POST /api/generations/<id>/test-case        it as a dataset row, with the expected output as edited

Who sees what: generations.selectors (404 `generation_not_found` for anyone who may not view the prompt).
"""

from __future__ import annotations

import datetime

from django.http import HttpResponse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from core.error_codes import DomainError
from core.ids import is_uuid
from core.jsonbody import validated
from core.pagination import Page, paginated
from evals.online import version_online_figures
from evals.serializers import DatasetVersionSerializer
from playground import selectors as prompt_selectors

from .cases import generation_test_case_add
from .compare import DEFAULT_LABEL, version_labels, version_previous
from .eval_scores import version_eval_scores
from .metrics import version_metrics
from .models import Generation
from .selectors import (
    STATUSES,
    generation_get,
    generation_list,
    generation_messages,
    generation_output,
    prompt_for_log,
)

LIST_PARAMS = {"version", "label", "status", "model", "since", "until", "q", "cursor", "page_size"}
SEARCH_MAX = 200
LIST_HEAD_CHARS = 200  # of the output, in a list


def generation_summary(g: Generation) -> dict:
    return {"id": g.pk, "prompt": str(g.prompt_id), "version": str(g.version_id), "label": g.label,
            "created_at": g.created_at.isoformat(), "source": g.source, "model": g.model, "status": g.status,
            "error_code": g.error_code or None, "latency_ms": g.latency_ms, "ttft_ms": g.ttft_ms,
            "prompt_tokens": g.prompt_tokens, "completion_tokens": g.completion_tokens,
            "cost": float(g.cost) if g.cost is not None else None, "variables": g.variables,
            "output_head": g.output[:LIST_HEAD_CHARS], "output_size": g.output_size}


def generation_detail(g: Generation) -> dict:
    return {**generation_summary(g), "request_id": g.request_id, "caller": g.user.username,
            "api_key": g.api_key_id, "cache_hit": g.cache_hit or None, "params": g.params,
            "messages": generation_messages(g), "output": g.output,
            "output_truncated": len(g.output) < g.output_size,
            "output_url": f"/api/generations/{g.pk}/output" if g.output_blob else None}


def _when(request, name: str) -> datetime.datetime | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        value = parse_datetime(raw)
        # In UTC: PostgreSQL refuses offsets past 15:59 that Python parses (up to 23:59).
        if value is not None:
            value = value.astimezone(datetime.UTC) if timezone.is_aware(value) else \
                value.replace(tzinfo=datetime.UTC)
    except (ValueError, OverflowError):  # a date that does not exist, or past year 1 in UTC
        value = None
    if value is None:
        raise DomainError(f"{name} must be an ISO 8601 date and time.", code="invalid_value", field=name)
    return value


def _choice(request, name: str, allowed) -> str:
    value = request.query_params.get(name, "")
    if value and value not in allowed:
        raise DomainError(f"{name} must be one of {', '.join(allowed)}.", code="invalid_value", field=name)
    return value


class GenerationListApi(APIView):
    permission_classes = [AllowAny]  # prompt_for_log decides (404 for anyone who may not view)
    pagination_class = Page

    @extend_schema(parameters=[
        OpenApiParameter("version", OpenApiTypes.UUID), OpenApiParameter("label", OpenApiTypes.STR),
        OpenApiParameter("status", {"type": "string", "enum": list(STATUSES)}),
        OpenApiParameter("model", OpenApiTypes.STR), OpenApiParameter("since", OpenApiTypes.DATETIME),
        OpenApiParameter("until", OpenApiTypes.DATETIME),
        OpenApiParameter("q", {"type": "string", "maxLength": SEARCH_MAX},
                         description="Search in the variables' values and the output's head")],
        responses=OpenApiTypes.OBJECT, description="The prompt's generations, newest first (a cursor page).")
    def get(self, request, prompt_id):
        unknown = sorted(set(request.query_params) - LIST_PARAMS)
        if unknown:
            raise DomainError(f"Unrecognized query parameter: {unknown[0]}.", code="unknown_parameter",
                              field=unknown[0])
        prompt = prompt_for_log(request, prompt_id=prompt_id)
        version = request.query_params.get("version")
        if version is not None and not is_uuid(version):
            raise DomainError("version must be a version id.", code="invalid_value", field="version")
        search = request.query_params.get("q", "")
        if len(search) > SEARCH_MAX:
            raise DomainError(f"q is at most {SEARCH_MAX} characters.", code="invalid_value", field="q")
        rows = generation_list(prompt=prompt, version_id=version, label=request.query_params.get("label", ""),
                               status=_choice(request, "status", STATUSES),
                               model=request.query_params.get("model", ""), since=_when(request, "since"),
                               until=_when(request, "until"), search=search)
        return paginated(request, self, rows, ("-created_at", "-id"),
                         lambda items: [generation_summary(g) for g in items])


class GenerationDetailApi(APIView):
    permission_classes = [AllowAny]  # generation_get decides

    @extend_schema(responses=OpenApiTypes.OBJECT,
                   description="One generation: its variables (to open it in the playground), messages, "
                               "parameters and output.")
    def get(self, request, generation_id):
        g = generation_get(user=request.user, generation_id=generation_id)
        return Response(generation_detail(g))


class GenerationOutputApi(APIView):
    permission_classes = [AllowAny]

    @extend_schema(responses={(200, "text/plain"): OpenApiTypes.STR}, description="The whole output.")
    def get(self, request, generation_id):
        g = generation_get(user=request.user, generation_id=generation_id)
        return HttpResponse(generation_output(g), content_type="text/plain; charset=utf-8")


class GenerationCaseRequestSerializer(serializers.Serializer):
    dataset_id = serializers.UUIDField(help_text="A dataset the caller may edit.")
    expected = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False,
                                     help_text="The row's expected output (default: the output).")


class GenerationTestCaseApi(APIView):
    permission_classes = [AllowAny]

    @extend_schema(request=GenerationCaseRequestSerializer, responses={201: DatasetVersionSerializer})
    def post(self, request, generation_id):
        """Add the generation as a row (variables as inputs, `expected` or its output as the expected
        output) in a new version of the dataset."""
        v = validated(GenerationCaseRequestSerializer, request)
        version = generation_test_case_add(user=request.user, generation_id=generation_id,
                                           dataset_id=v["dataset_id"], expected=v.get("expected"))
        return Response(DatasetVersionSerializer(version).data, status=status.HTTP_201_CREATED)


METRIC_PARAMS = {"label", "days", "bucket"}


def comparison(*, user, prompt, version, label: str, days: int, bucket: str) -> dict:
    """The version's figures and those of the version it is compared with (generations.compare),
    over the same window."""
    until = timezone.now()
    since = until - datetime.timedelta(days=days)
    previous, why = version_previous(prompt=prompt, version=version, label=label or DEFAULT_LABEL)
    return {
        "label": label, "labels": version_labels(prompt=prompt, version=version), "since": since,
        "until": until, "compared_as": why,
        "bucket": bucket,
        "version": {"id": str(version.pk), "number": version.number,
                    "evals": version_eval_scores(user=user, version=version),
                    "online": version_online_figures(version_id=version.pk, since=since, until=until,
                                                     bucket=bucket),
                    **version_metrics(version_id=version.pk, since=since, label=label, bucket=bucket)},
        "previous": None if previous is None else {
            "id": str(previous.pk), "number": previous.number,
            "evals": version_eval_scores(user=user, version=previous),
            "online": version_online_figures(version_id=previous.pk, since=since, until=until, bucket=bucket),
            **version_metrics(version_id=previous.pk, since=since, label=label, bucket=bucket)}}


class VersionMetricsApi(APIView):
    permission_classes = [AllowAny]

    @extend_schema(parameters=[
        OpenApiParameter("label", OpenApiTypes.STR, description="Only runs through this label (a split's arm "
                                                                "is the version under its label)"),
        OpenApiParameter("days", {"type": "integer", "minimum": 1, "maximum": 90}),
        OpenApiParameter("bucket", {"type": "string", "enum": ["hour", "day"]})],
        responses=OpenApiTypes.OBJECT,
        description="Count, latency p50/p95 and mean (95% CI), TTFT, tokens, cost and error rate "
                    "(95% Wilson CI) per time bucket, beside the split's control or the version the label "
                    "held before; the evaluation runs of each (mean score and 95% interval per "
                    "evaluator) whose dataset the caller may see; and each one's online scores per evaluator "
                    "(count, mean and 95% interval, pass rate, per bucket).")
    def get(self, request, prompt_id, version_id):
        unknown = sorted(set(request.query_params) - METRIC_PARAMS)
        if unknown:
            raise DomainError(f"Unrecognized query parameter: {unknown[0]}.", code="unknown_parameter",
                              field=unknown[0])
        prompt = prompt_for_log(request, prompt_id=prompt_id)
        version = prompt_selectors.version_get(prompt=prompt, version_id=version_id)
        days = request.query_params.get("days", "7")
        if not days.isdigit() or not 1 <= int(days) <= 90:
            raise DomainError("days must be a whole number from 1 to 90.", code="invalid_value", field="days")
        bucket = _choice(request, "bucket", ("hour", "day")) or ("hour" if int(days) <= 7 else "day")
        label = request.query_params.get("label", "")
        return Response(comparison(user=request.user, prompt=prompt, version=version, label=label,
                                   days=int(days), bucket=bucket))
