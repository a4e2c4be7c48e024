"""Run history API: a prompt's runs (GET /api/prompts/<id>/runs) and one run
(GET, DELETE /api/runs/<run_id>). The runs are stored by the playground's run
route (inference_client/playground_runs.py); playground/runs.py decides who sees them."""

from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet
from django.db.models.functions import Substr
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from core.error_codes import DomainError
from core.pagination import Page, first_page, paginated

from .models import PlaygroundRun
from .runs import run_delete, run_get, run_list

LIST_PARAMS = {"q", "mine", "cursor", "page_size"}
SEARCH_MAX = 200


# A list row reads the first HEAD_CHARS of each output, not the whole of it (up to
# PLAYGROUND_RUN_OUTPUT_MAX_CHARS), nor the draft's or the version's texts.
HEAD_CHARS = 1000
FIRST_LINE_CHARS = 200
LIST_FIELDS = ("id", "prompt", "created_at", "user__username", "version__number", "model", "status",
               "error_code", "latency_ms", "ttft_ms", "prompt_tokens", "completion_tokens",
               "output_truncated")


def first_line(text: str) -> str:
    return text.lstrip().split("\n", 1)[0][:FIRST_LINE_CHARS]


def _summary(run: PlaygroundRun, *, draft: bool, line: str) -> dict:
    return {
        "id": str(run.id), "prompt": str(run.prompt_id) if run.prompt_id else None,
        "created_at": run.created_at.isoformat(),
        "user": run.user.username, "version": str(run.version_id) if run.version_id else None,
        "version_number": run.version.number if run.version_id else None, "draft": draft,
        "model": run.model, "status": run.status, "error_code": run.error_code or None,
        "latency_ms": run.latency_ms, "ttft_ms": run.ttft_ms, "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens, "first_line": line,
        "output_truncated": run.output_truncated,
    }


def run_summary(run: PlaygroundRun) -> dict:
    return _summary(run, draft=run.draft is not None, line=first_line(run.output))


def list_rows(runs: QuerySet[PlaygroundRun]) -> QuerySet[PlaygroundRun]:
    return runs.only(*LIST_FIELDS).annotate(
        output_head=Substr("output", 1, HEAD_CHARS),
        has_draft=ExpressionWrapper(Q(draft__isnull=False), output_field=BooleanField()))


def list_summary(run: PlaygroundRun) -> dict:
    """run_summary of a list_rows row."""
    head, line = run.output_head, first_line(run.output_head)
    # The first line may go on past the head (or start after it): read the whole output then.
    if len(head) == HEAD_CHARS and len(line) < FIRST_LINE_CHARS and "\n" not in head.lstrip():
        line = first_line(PlaygroundRun.objects.values_list("output", flat=True).get(pk=run.pk))
    return _summary(run, draft=run.has_draft, line=line)


def run_detail(run: PlaygroundRun) -> dict:
    return {**run_summary(run), "draft": run.draft, "variables": run.variables, "params": run.params,
            "output": run.output, "output_size": run.output_size, "tool_calls": run.tool_calls,
            "parsed": run.parsed, "request_id": run.request_id}


SUMMARY_FIELDS = {
    "id": serializers.UUIDField(), "prompt": serializers.UUIDField(allow_null=True),
    "created_at": serializers.DateTimeField(),
    "user": serializers.CharField(), "version": serializers.UUIDField(allow_null=True),
    "version_number": serializers.IntegerField(allow_null=True), "draft": serializers.BooleanField(),
    "model": serializers.CharField(), "status": serializers.ChoiceField(["ok", "error", "cancelled"]),
    "error_code": serializers.CharField(allow_null=True),
    "latency_ms": serializers.IntegerField(allow_null=True),
    "ttft_ms": serializers.IntegerField(allow_null=True), "prompt_tokens": serializers.IntegerField(),
    "completion_tokens": serializers.IntegerField(), "first_line": serializers.CharField(),
    "output_truncated": serializers.BooleanField()}


RUN_LIST_PARAMETERS = [
    OpenApiParameter("q", {"type": "string", "maxLength": SEARCH_MAX},
                     description="Search in the variables' values and the output"),
    OpenApiParameter("mine", {"type": "string", "enum": ["0", "1"]}, description="1: only the caller's runs")]


RUN_ORDER = ("-created_at", "-id")
FIRST_PAGE_SIZE = 20  # the Runs panel's page (static/js/playground/runs.js)


def runs_first_page(request, *, prompt_id, path: str) -> dict:
    """The Runs panel's first page, as GET `path` answers it: the playground page carries it."""
    runs = run_list(user=request.user, prompt_id=prompt_id)
    return first_page(request, path, list_rows(runs), RUN_ORDER,
                      lambda items: [list_summary(r) for r in items], FIRST_PAGE_SIZE)


class RunListApi(APIView):
    permission_classes = [AllowAny]  # access_prompt decides (404 for anyone who may not view)
    pagination_class = Page  # the schema documents the cursor page paginated() answers

    @extend_schema(parameters=RUN_LIST_PARAMETERS,
        responses=inline_serializer("PlaygroundRunSummary", SUMMARY_FIELDS, many=True),
        description="The prompt's playground runs, newest first.")
    def get(self, request, prompt_id):
        unknown = sorted(set(request.query_params) - LIST_PARAMS)
        if unknown:
            raise DomainError(f"Unrecognized query parameter: {unknown[0]}.", code="unknown_parameter",
                              field=unknown[0])
        mine = request.query_params.get("mine", "0")
        if mine not in ("0", "1"):
            raise DomainError("mine must be 0 or 1.", code="invalid_value", field="mine")
        search = request.query_params.get("q", "")
        if len(search) > SEARCH_MAX:
            raise DomainError(f"q is at most {SEARCH_MAX} characters.", code="invalid_value", field="q")
        runs = run_list(user=request.user, prompt_id=prompt_id, search=search, mine=mine == "1")
        return paginated(request, self, list_rows(runs), RUN_ORDER,
                         lambda items: [list_summary(r) for r in items])


class RunDetailApi(APIView):
    permission_classes = [AllowAny]  # run_get decides: 404 for anyone who may not view the prompt

    @extend_schema(responses=OpenApiTypes.OBJECT,
                   description="One run with its exact request state and output (the permalink).")
    def get(self, request, run_id):
        return Response(run_detail(run_get(user=request.user, run_id=run_id)))

    @extend_schema(responses={204: None}, description="Delete a run (its author only).")
    def delete(self, request, run_id):
        run_delete(user=request.user, run_id=run_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
