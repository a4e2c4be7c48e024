"""A prompt's pinned dataset (each saved version runs over it beside its
parent) and a version's scores against its parent's."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from core.jsonbody import validated
from playground.api import PromptScopedApi
from playground.permissions import request_access

from .pins import pin_delete, pin_get, pin_set, version_deltas


class PinRequestSerializer(serializers.Serializer):
    dataset = serializers.UUIDField(help_text="A dataset you may view.")
    evaluators = serializers.JSONField(required=False, default=list,
                                       help_text="As POST /api/evals/runs takes them; [] scores nothing.")


def _pin_body(pin) -> dict:
    return {"dataset": str(pin.dataset_id), "dataset_name": pin.dataset.name, "evaluators": pin.evaluators,
            "created_at": pin.created_at}


class PromptPinApi(PromptScopedApi):
    @extend_schema(responses=OpenApiTypes.OBJECT, description="The pin; `dataset` null when there is none.")
    def get(self, request, prompt_id):
        pin = pin_get(prompt=request_access(request, prompt_id=prompt_id, need="view"))
        if pin is None:
            return Response({"dataset": None, "dataset_name": None, "evaluators": [], "created_at": None})
        return Response(_pin_body(pin))

    @extend_schema(request=PinRequestSerializer, responses=OpenApiTypes.OBJECT,
                   description="Pin a dataset: each version saved on the prompt from now on runs over the "
                               "dataset's newest version beside its parent, as its author, with these "
                               "evaluators.")
    def put(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="edit")
        v = validated(PinRequestSerializer, request)
        pin = pin_set(prompt=prompt, user=request.user, dataset_id=v["dataset"], evaluators=v["evaluators"])
        return Response(_pin_body(pin))

    @extend_schema(responses={204: None})
    def delete(self, request, prompt_id):
        pin_delete(prompt=request_access(request, prompt_id=prompt_id, need="edit"))
        return Response(status=status.HTTP_204_NO_CONTENT)


class VersionDeltasApi(PromptScopedApi):
    @extend_schema(responses=OpenApiTypes.OBJECT,
                   description="The version's scores against its parent's: the newest run you may see with "
                               "both (over the pinned dataset first), per evaluator both means and the "
                               "difference once it is done. `run` is null when none has both.")
    def get(self, request, prompt_id, version_id):
        prompt = request_access(request, prompt_id=prompt_id, need="view", version_id=version_id)
        return Response(version_deltas(user=request.user, prompt=prompt, version_id=version_id))
