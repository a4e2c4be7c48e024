"""A label's gate: which dataset and evaluator a move must pass, and the record of decisions."""

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from core.error_codes import DomainError
from core.jsonbody import validated
from playground.api import Page, PromptScopedApi, paginated
from playground.permissions import request_access

from .gate import gate_get, gate_set
from .models import GateDecision, LabelGate
from .serializers import GateDecisionSerializer, LabelGateRequestSerializer, LabelGateSerializer


def _gate_or_404(prompt, name):
    gate = gate_get(prompt=prompt, name=name)
    if gate is None:
        raise DomainError(f"Label {name!r} has no gate.", code="gate_not_found")
    return gate


class LabelGateApi(PromptScopedApi):
    @extend_schema(responses=LabelGateSerializer)
    def get(self, request, prompt_id, name):
        prompt = request_access(request, prompt_id=prompt_id, need="view")
        return Response(LabelGateSerializer(_gate_or_404(prompt, name)).data)

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
        _gate_or_404(prompt, name).delete()
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
