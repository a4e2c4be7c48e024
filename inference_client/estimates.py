"""Cost and time before a run: what N generations would cost and how long
they would take on the pool as it is now.

    POST /api/estimate        {"items": [{"model", "messages", "max_tokens", "count"}, ...]}
    POST /api/evals/estimate  {"dataset", "dataset_version", "columns"}: an evaluation run's,
                              checked as the run would be (evals.runs.evalrun_plan)

Cost is an upper bound: every generation priced at its max_tokens
(inference_protocol.pricing; null for an unpriced model). Time comes from the
live workers' heartbeats: a full batch takes slots / rate (Little's law on
the pool's batch slots and the rate its workers complete requests at, as the
capacity controller reads it), and the requests already waiting plus these
need ceil((queued + count) / slots) batches. Null while no worker of the
model is live.
"""

from __future__ import annotations

import math

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from core.error_codes import DomainError
from core.jsonbody import validated
from evals.runs import evalrun_plan
from evals.serializers import EvalRunCreateSerializer
from inference_client.capacity import worker_request_rate
from inference_client.stages.admit import estimate_prompt_tokens
from inference_protocol import validation as protocol
from inference_protocol.backend import live_workers
from inference_protocol.catalog import model_names, split_served
from inference_protocol.pricing import model_price

MAX_ITEMS = 64
MAX_COUNT = 1_000_000


def item_estimate(*, model: str, messages: list[dict], max_tokens: int | None, count: int) -> dict:
    """One kind of generation, `count` times: its messages' text counted as admission counts it."""
    if model not in model_names():
        raise DomainError(f"Unknown model {model!r}.", code="model_not_found", field="model")
    max_tokens = settings.INFERENCE_DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
    prompt_tokens = estimate_prompt_tokens([{"content": m.get("content") or ""} for m in messages])
    price = model_price(model)
    cost = None if price is None else \
        count * (prompt_tokens * price["input"] + max_tokens * price["output"]) / 1_000_000
    return {"model": model, "count": count, "prompt_tokens": prompt_tokens, "max_tokens": max_tokens,
            "cost_usd": cost}


def estimate(items: list[dict]) -> dict:
    """The items' estimates, their total cost (null if any model is unpriced)
    and the expected seconds until the last one is done."""
    out = [item_estimate(**item) for item in items]
    by_model: dict[str, list[dict]] = {}
    for record in live_workers():
        if record.get("healthy", True):
            by_model.setdefault(split_served(record["model"])[0], []).append(record)
    seconds: float | None = 0.0
    basis = {}
    for model in sorted({i["model"] for i in out}):
        workers = by_model.get(model, [])
        rps = sum(worker_request_rate(w) for w in workers)
        queued = sum(int(w.get("queue_length") or 0) for w in workers)
        slots = sum(int(w.get("max_batch_size") or 0) for w in workers)
        basis[model] = {"requests_per_s": rps, "queued": queued, "slots": slots, "workers": len(workers)}
        wanted = sum(i["count"] for i in out if i["model"] == model)
        if rps <= 0 or slots <= 0 or seconds is None:
            seconds = None
        else:  # models run on their own workers, side by side: the slowest decides
            seconds = max(seconds, slots / rps * math.ceil((queued + wanted) / slots))
    costs = [i["cost_usd"] for i in out]
    return {"items": out, "cost_usd": None if None in costs else math.fsum(c for c in costs if c is not None),
            "seconds": seconds, "basis": basis}


class EstimateMessageSerializer(serializers.Serializer):
    role = serializers.ChoiceField(sorted(protocol.ROLES))
    content = serializers.CharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False,
                                    default="")


class EstimateItemSerializer(serializers.Serializer):
    model = serializers.CharField()
    messages = serializers.ListField(child=EstimateMessageSerializer(), min_length=1,
                                     max_length=settings.PROMPT_MAX_MESSAGES + 2,
                                     help_text="The messages of one generation (their text is counted).")
    max_tokens = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=1,
                                          max_value=settings.INFERENCE_MAX_TOKENS_LIMIT)
    count = serializers.IntegerField(min_value=1, max_value=MAX_COUNT, default=1)


class EstimateRequestSerializer(serializers.Serializer):
    items = serializers.ListField(child=EstimateItemSerializer(), min_length=1, max_length=MAX_ITEMS)


class EstimateApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=EstimateRequestSerializer, responses=OpenApiTypes.OBJECT,
                   description="What generations would cost (an upper bound) and how long they would "
                   "take on the pool as it is now.")
    def post(self, request):
        return Response(estimate(validated(EstimateRequestSerializer, request)["items"]))


_NUMBER = {"type": "number", "minimum": 0}


@extend_schema_field({"type": "array", "minItems": 1, "maxItems": settings.EVAL_RUN_MAX_COLUMNS, "items": {
    "type": "object", "additionalProperties": False, "required": ["prompt", "version"], "properties": {
        "prompt": {"type": "string", "format": "uuid"}, "version": {"type": "string", "format": "uuid"},
        "params": {"type": "object", "additionalProperties": False, "properties": {
            "temperature": {**_NUMBER, "maximum": settings.INFERENCE_TEMPERATURE_MAX},
            "top_p": {**_NUMBER, "exclusiveMinimum": True, "maximum": 1},
            "max_tokens": {"type": "integer", "minimum": 1,
                           "maximum": settings.INFERENCE_MAX_TOKENS_LIMIT}}}}}})
class EstimateColumnsField(serializers.JSONField):
    """The columns of a run to estimate (checked as a run's are: evals.runs)."""


class EvalEstimateRequestSerializer(serializers.Serializer):
    """A run's request as POST /api/evals/runs takes it, less what scoring needs; columns by version."""

    dataset = EvalRunCreateSerializer().fields["dataset"]
    dataset_version = EvalRunCreateSerializer().fields["dataset_version"]
    repeats = EvalRunCreateSerializer().fields["repeats"]
    columns = EstimateColumnsField()


class EvalEstimateApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=EvalEstimateRequestSerializer, responses=OpenApiTypes.OBJECT,
                   description="What an evaluation run would cost (rows x columns x repeats, each at its "
                   "max_tokens) and how long the pool needs for it now.")
    def post(self, request):
        v = validated(EvalEstimateRequestSerializer, request)
        return Response(estimate(evalrun_plan(user=request.user, dataset_id=v["dataset"],
                                              version_id=v["dataset_version"], columns=v["columns"],
                                              repeats=v["repeats"])))
