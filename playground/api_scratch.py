"""The scratch playground's API (signed-in users; each sees only their own):

    GET, PUT /api/playground/draft   the editor's state, kept as it is typed
    GET      /api/playground/runs    the scratch runs, newest first
    POST     /api/playground/save    {"title", "description", "version": {...}}: a prompt
                                     and its first version, in one step

Runs go to POST /api/playground/run (inference_client/playground_runs.py).
"""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from core.error_codes import DomainError
from core.jsonbody import validated

from .api_runs import RUN_LIST_PARAMETERS, SUMMARY_FIELDS, RunListApi
from .scratch import draft_get, draft_put, draft_save_as_prompt
from .serializers import NOT_BLANK, PromptSerializer, VersionCreateSerializer, VersionSerializer

DRAFT = inline_serializer("ScratchDraft", {"state": serializers.DictField(),
                                           "updated_at": serializers.DateTimeField(allow_null=True)})


class ScratchDraftRequestSerializer(serializers.Serializer):
    state = serializers.DictField(help_text="The editor's state, as the page keeps it.")


class ScratchDraftApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses=DRAFT, description="The caller's scratch draft ({} when there is none).")
    def get(self, request):
        return Response(draft_get(user=request.user))

    @extend_schema(request=ScratchDraftRequestSerializer, responses=DRAFT,
                   description="Replace the caller's scratch draft.")
    def put(self, request):
        return Response(draft_put(user=request.user,
                                  state=validated(ScratchDraftRequestSerializer, request)["state"]))


class ScratchRunListApi(RunListApi):
    permission_classes = [IsAuthenticated]

    @extend_schema(parameters=RUN_LIST_PARAMETERS,
                   responses=inline_serializer("ScratchRunSummary", SUMMARY_FIELDS, many=True),
                   description="The caller's scratch runs, newest first.")
    def get(self, request, prompt_id=None):
        return super().get(request, prompt_id=None)


class ScratchVersionSerializer(VersionCreateSerializer):
    """A new prompt's first version: inline, with no id, parent or merge."""

    id = None
    parent = None
    merge_parent = None
    body_upload = None
    body = serializers.CharField(allow_blank=True, trim_whitespace=False, validators=[NOT_BLANK],
                                 help_text="The last user message template, inline.")


class ScratchSaveRequestSerializer(serializers.Serializer):
    title = serializers.RegexField(r"\S", max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    version = ScratchVersionSerializer()


class ScratchSaveApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=ScratchSaveRequestSerializer,
                   responses={201: inline_serializer("ScratchSaved", {"prompt": PromptSerializer(),
                                                                      "version": VersionSerializer()})},
                   description="Save the scratch draft as a new prompt with its first version.")
    def post(self, request):
        raw = request.data.get("version") if isinstance(request.data, dict) else None
        raw = raw if isinstance(raw, dict) else {}
        given = [k for k in ("id", "parent", "merge_parent", "body_upload") if k in raw]
        if given:  # a scratch draft saves inline, as the first version of a new prompt
            raise DomainError(f"A scratch draft's first version has no {given[0]}.", code="unknown_parameter",
                              field=f"version.{given[0]}")
        data = validated(ScratchSaveRequestSerializer, request)
        v = data["version"]
        prompt, made = draft_save_as_prompt(
            user=request.user, title=data["title"], description=data["description"],
            version={"body": v.get("body", ""), "model_name": v.get("model"), "temperature": v["temperature"],
                     "max_tokens": v["max_tokens"], "top_p": v["top_p"], "seed": v["seed"], "stop": v["stop"],
                     "system": v["system"], "messages": v["messages"], "variables": v["variables"],
                     "response_schema": v["response_schema"], "tools": v["tools"],
                     "tool_choice": v["tool_choice"], "message": v["message"]})
        return Response({"prompt": PromptSerializer(prompt).data,
                         "version": VersionSerializer(made, context={"with_body": True}).data},
                        status=status.HTTP_201_CREATED)

