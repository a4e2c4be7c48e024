"""A label's gate: which dataset and evaluator a move must pass, and the record of decisions."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response

from core.jsonbody import validated
from playground.api import Page, PromptScopedApi, paginated
from playground.permissions import request_access

from .gate import gate_clear, gate_set
from .gate_runs import gate_or_404, gate_run_start, gate_runs
from .models import GateDecision, LabelGate
from .serializers import (
    GateDecisionSerializer,
    GateRunSerializer,
    GateRunStartRequestSerializer,
    LabelGateRequestSerializer,
    LabelGateSerializer,
)


class LabelGateApi(PromptScopedApi):
    @extend_schema(responses=LabelGateSerializer)
    def get(self, request, prompt_id, name):
        prompt = request_access(request, prompt_id=prompt_id, need="view")
        return Response(LabelGateSerializer(gate_or_404(prompt=prompt, name=name)).data)

    @extend_schema(request=LabelGateRequestSerializer, responses=LabelGateSerializer,
                   description="Require a passing run before the label moves: the candidate's mean score "
                               "by `evaluator` over `dataset` must be within `margin` of the version the "
                               "label holds.")
    def put(self, request, prompt_id, name):
        prompt = request_access(request, prompt_id=prompt_id, need="edit")
        v = validated(LabelGateRequestSerializer, request)
        gate = gate_set(prompt=prompt, name=name, user=request.user, dataset_id=v["dataset"],
                        evaluator=v["evaluator"], margin=v["margin"])
        return Response(LabelGateSerializer(gate).data)

    @extend_schema(responses={204: None})
    def delete(self, request, prompt_id, name):
        prompt = request_access(request, prompt_id=prompt_id, need="edit")
        gate_clear(prompt=prompt, name=name, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PromptGateListApi(PromptScopedApi):
    @extend_schema(responses=LabelGateSerializer(many=True), description="Every gated label of the prompt.")
    def get(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="view")
        gates = LabelGate.objects.filter(prompt=prompt).select_related("dataset").order_by("label_name")
        return Response(LabelGateSerializer(gates, many=True).data)


class LabelGateDecisionsApi(PromptScopedApi):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(responses=GateDecisionSerializer(many=True),
                   description="Every gated move attempt, newest first: passed or refused, why, the run.")
    def get(self, request, prompt_id, name):
        prompt = request_access(request, prompt_id=prompt_id, need="view")
        decisions = (GateDecision.objects.filter(gate__prompt=prompt, gate__label_name=name)
                     .select_related("actor"))
        return paginated(request, self, decisions, ("-id",),
                         lambda items: GateDecisionSerializer(items, many=True).data)


class LabelGateRunsApi(PromptScopedApi):
    @extend_schema(parameters=[OpenApiParameter("version", OpenApiTypes.UUID, required=True, description=(
        "The version the label would move to"))], responses=GateRunSerializer(many=True),
        description="The newest runs over the gate's dataset with a column for `version`, each with what "
                    "the gate would say of moving the label (from where it is now) to it; nothing is "
                    "recorded. A review's approver picks one of these.")
    def get(self, request, prompt_id, name):
        prompt = request_access(request, prompt_id=prompt_id, need="view")
        listed = gate_runs(prompt=prompt, name=name, user=request.user,
                           version_id=request.query_params.get("version"))
        return Response(GateRunSerializer([{"run": run, "verdict": verdict} for run, verdict in listed],
                                          many=True).data)

    @extend_schema(request=GateRunStartRequestSerializer, responses={201: GateRunSerializer},
                   description="Start a run over the gate's dataset of `version` and the version the "
                               "label holds, scored by the gate's evaluator.")
    def post(self, request, prompt_id, name):
        prompt = request_access(request, prompt_id=prompt_id, need="edit")
        data = validated(GateRunStartRequestSerializer, request)
        run, verdict = gate_run_start(prompt=prompt, name=name, user=request.user,
                                      version_id=str(data["version"]))
        return Response(GateRunSerializer({"run": run, "verdict": verdict}).data,
                        status=status.HTTP_201_CREATED)
