"""Evaluations REST API: the evaluators, runs (list, create, detail, cancel, delete).
Views parse, check access, call a service or a selector and serialize; what the
reader may not see of a column's prompt is redacted (visibility)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.pagination import Page, paginated

from .api import refuse_unknown_params
from .evaluators import evaluator_list
from .permissions import access_dataset, access_run, runs_visible_to
from .runs import evalrun_cancel, evalrun_create, evalrun_delete, evalrun_resume_if_stale
from .serializers import EvalRunCreateSerializer, EvalRunSerializer, EvaluatorSerializer
from .visibility import visibility_for


class EvaluatorListApi(APIView):
    @extend_schema(responses=EvaluatorSerializer(many=True))
    def get(self, request):
        return Response([{"name": e.name, "version": e.version, "doc": e.doc, "args": list(e.args),
                          "needs_expected": e.needs_expected} for e in evaluator_list()])


def _run_queryset():
    return ("dataset_version__dataset", "owner")


def _runs_body(request, runs) -> list:
    """Runs as the reader may see them: prompts it cannot view are redacted (visibility)."""
    return EvalRunSerializer(runs, many=True,
                             context={"visibility": visibility_for(user=request.user, runs=runs)}).data


def _run_body(request, run) -> dict:
    return EvalRunSerializer(run, context={"visibility": visibility_for(user=request.user, runs=[run])}).data


class EvalRunListApi(APIView):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(parameters=[OpenApiParameter("dataset", str, description="Only runs over this dataset")],
                   responses=EvalRunSerializer(many=True))
    def get(self, request):
        refuse_unknown_params(request, {"dataset", "cursor", "page_size"})
        runs = runs_visible_to(user=request.user).select_related(*_run_queryset()).prefetch_related(
            "columns__prompt_version__prompt")
        if request.query_params.get("dataset"):
            dataset = access_dataset(user=request.user, dataset_id=request.query_params["dataset"],
                                     need="view")
            runs = runs.filter(dataset_version__dataset=dataset)
        return paginated(request, self, runs, ("-created_at",), lambda items: _runs_body(request, items))

    @extend_schema(request=EvalRunCreateSerializer, responses={201: EvalRunSerializer},
                   description="Run every row of a dataset version through each column (prompt version, "
                               "model, parameters) at batch priority, scored by the evaluators.")
    def post(self, request):
        data = EvalRunCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        run = evalrun_create(user=request.user, dataset_id=v["dataset"], version_id=v["dataset_version"],
                             columns=v["columns"], evaluators=v["evaluators"], name=v["name"],
                             repeats=v["repeats"])
        return Response(_run_body(request, run), status=status.HTTP_201_CREATED)


class EvalRunDetailApi(APIView):
    @extend_schema(responses=EvalRunSerializer, description="The run, its progress and (once done) "
                                                             "per-column aggregates with 95% intervals.")
    def get(self, request, run_id):
        run = access_run(user=request.user, run_id=run_id)
        evalrun_resume_if_stale(run)
        return Response(_run_body(request, run))

    @extend_schema(responses={204: None},
                   description="The run's creator or the dataset's owner deletes a finished run with its "
                               "results; a queued or running one is a 409 run_active (cancel it first).")
    def delete(self, request, run_id):
        evalrun_delete(run=access_run(user=request.user, run_id=run_id, need="delete"))
        return Response(status=status.HTTP_204_NO_CONTENT)


class EvalRunCancelApi(APIView):
    @extend_schema(request=None, responses=EvalRunSerializer)
    def post(self, request, run_id):
        run = evalrun_cancel(run=access_run(user=request.user, run_id=run_id, need="cancel"))
        return Response(_run_body(request, run))
