"""Label API: get a version by label, compare-and-set moves, undo/redo, history."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from . import selectors, services
from .api import paginated
from .permissions import access_prompt
from .serializers import (
    LabelMoveRequestSerializer,
    LabelMoveSerializer,
    LabelSerializer,
    LabelStepRequestSerializer,
    VersionSerializer,
)

LabelWithVersion = inline_serializer("LabelWithVersion", {
    "name": serializers.CharField(), "version": VersionSerializer()})


class LabelListApi(APIView):
    @extend_schema(responses=LabelSerializer(many=True))
    def get(self, request, prompt_id):
        prompt = access_prompt(user=request.user, prompt_id=prompt_id, need="view")
        return paginated(request, self, selectors.label_list(prompt=prompt), ("name",),
                         lambda items: LabelSerializer(items, many=True).data)


class LabelDetailApi(APIView):
    @extend_schema(responses=LabelWithVersion, description="The version a label points at.")
    def get(self, request, prompt_id, name):
        prompt = access_prompt(user=request.user, prompt_id=prompt_id, need="view")
        label = selectors.label_get(prompt=prompt, name=name)
        return Response({"name": label.name, "updated_at": label.updated_at,
                         "version": VersionSerializer(label.version, context={"with_body": True}).data})


class LabelMoveApi(APIView):
    @extend_schema(request=LabelMoveRequestSerializer, responses={200: LabelSerializer},
                   description="Compare-and-set: 409 label_conflict (with current_version) when the "
                               "label does not hold `expected`.")
    def post(self, request, prompt_id, name):
        prompt = access_prompt(user=request.user, prompt_id=prompt_id, need="edit")
        data = LabelMoveRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        label = services.label_move(prompt=prompt, name=name, version_id=data.validated_data["version"],
                                    expected_version_id=data.validated_data["expected"], actor=request.user)
        return Response(LabelSerializer(label).data)


class _LabelStepApi(APIView):
    step = None

    @extend_schema(request=LabelStepRequestSerializer, responses={200: LabelSerializer})
    def post(self, request, prompt_id, name):
        prompt = access_prompt(user=request.user, prompt_id=prompt_id, need="edit")
        data = LabelStepRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        label = type(self).step(prompt=prompt, name=name, actor=request.user,
                                expected_version_id=data.validated_data["expected"])
        return Response(LabelSerializer(label).data)


class LabelUndoApi(_LabelStepApi):
    """Move the label back to where its last move found it."""

    step = services.label_undo


class LabelRedoApi(_LabelStepApi):
    """Re-apply the last undone move."""

    step = services.label_redo


class LabelHistoryApi(APIView):
    @extend_schema(responses=LabelMoveSerializer(many=True), description="Every move, newest first.")
    def get(self, request, prompt_id, name):
        prompt = access_prompt(user=request.user, prompt_id=prompt_id, need="view")
        moves = selectors.label_history(prompt=prompt, name=name).select_related("actor")
        return paginated(request, self, moves, ("-id",),
                         lambda items: LabelMoveSerializer(items, many=True).data)
