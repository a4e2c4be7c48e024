"""Prompt and version API. Views parse, call access_prompt + a service or
selector, and serialize; nothing else."""

import itertools
import json

from django.conf import settings
from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from core.blobstore import get_blob_store
from core.error_codes import DomainError
from core.jsonbody import validated
from core.pagination import Page, paginated
from core.streaming import for_request

from . import selectors, services
from .bodies import body_object_key, body_range, body_text
from .branches import BRANCH_NAME_PATTERN, check_branch_name
from .calls.builder import version_render
from .diffing import line_diff, word_diff
from .matching import Budget
from .models import Storage
from .permissions import request_access
from .serializers import (
    MergePreviewRequestSerializer,
    PromptSerializer,
    RenderSerializer,
    TreeNodeSerializer,
    UploadRequestSerializer,
    UploadSerializer,
    VersionCreateSerializer,
    VersionSerializer,
)
from .uploads import upload_presign
from .version_diff import version_diff


class PromptScopedApi(APIView):
    """A view on one prompt. Signed-out link holders may reach it, so DRF's
    IsAuthenticated is off: request_access decides every call (404 / 403)."""

    permission_classes = [AllowAny]


class PromptListApi(APIView):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(parameters=[OpenApiParameter("q", str, description="Search in title and description")],
                   responses=PromptSerializer(many=True))
    def get(self, request):
        prompts = selectors.prompt_list(user=request.user, search=request.query_params.get("q", ""))
        return paginated(request, self, prompts, ("-updated_at", "-created_at"),
                         lambda items: PromptSerializer(items, many=True).data)

    @extend_schema(request=PromptSerializer, responses={201: PromptSerializer})
    def post(self, request):
        prompt = services.prompt_create(owner=request.user, **validated(PromptSerializer, request))
        return Response(PromptSerializer(prompt).data, status=status.HTTP_201_CREATED)


class PromptDetailApi(PromptScopedApi):
    @extend_schema(responses=PromptSerializer)
    def get(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="view", version_id=None)
        return Response(PromptSerializer(prompt).data)


class VersionListApi(PromptScopedApi):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(responses=VersionSerializer(many=True), parameters=[OpenApiParameter(
        "branch", {"type": "string", "pattern": BRANCH_NAME_PATTERN},
        description="Only the versions saved on this branch.")])
    def get(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="view")
        versions = selectors.version_list(prompt=prompt).select_related("author")
        if (branch := request.query_params.get("branch")) is not None:
            check_branch_name(branch)
            versions = versions.filter(branch=branch)
        return paginated(request, self, versions, ("number",),
                         lambda items: VersionSerializer(items, many=True).data)

    @extend_schema(request=VersionCreateSerializer, responses={201: VersionSerializer},
                   description="Create a version: an edit of `parent` (two edits of one parent make a "
                   "branch). Large bodies: presign an upload, PUT it, then pass body_upload.")
    def post(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="edit")
        v = validated(VersionCreateSerializer, request)
        version = services.version_create(
            prompt=prompt, author=request.user, parent_id=v.get("parent"), body=v.get("body"),
            body_upload=v.get("body_upload"), model_name=v.get("model"), temperature=v["temperature"],
            max_tokens=v["max_tokens"], top_p=v["top_p"], seed=v["seed"], stop=v["stop"], system=v["system"],
            messages=v["messages"], variables=v["variables"], response_schema=v["response_schema"],
            tools=v["tools"], tool_choice=v["tool_choice"],
            message=v["message"],
            version_id=v.get("id"), merge_parent_id=v.get("merge_parent"), branch=v["branch"],
        )
        return Response(VersionSerializer(version, context={"with_body": True}).data,
                        status=status.HTTP_201_CREATED)


class VersionDetailApi(PromptScopedApi):
    @extend_schema(responses=VersionSerializer, description="Metadata, plus the body when it is small.")
    def get(self, request, prompt_id, version_id):
        prompt = request_access(request, prompt_id=prompt_id, need="view", version_id=version_id)
        version = selectors.version_get(prompt=prompt, version_id=version_id)
        return Response(VersionSerializer(version, context={"with_body": True}).data)


def _parse_range(header: str, size: int) -> tuple[int, int] | None:
    if not header:
        return None
    error = DomainError("Unsupported or unsatisfiable Range.", code="range_not_satisfiable", field="Range",
                        headers={"Content-Range": f"bytes */{size}"})
    unit, _, spec = header.partition("=")
    if unit.strip() != "bytes" or "," in spec:
        raise error
    first, _, last = spec.strip().partition("-")
    try:
        if first == "":
            start, end = max(0, size - int(last)), size
        else:
            start = int(first)
            end = min(size, int(last) + 1) if last else size
    except ValueError:
        raise error from None
    if start >= size or start >= end:
        raise error
    return start, end


class VersionBodyApi(PromptScopedApi):
    @extend_schema(
        parameters=[OpenApiParameter("presign", bool, description="Return a short-lived GET URL instead"),
                    OpenApiParameter("Range", str, OpenApiParameter.HEADER, description="bytes=START-END")],
        responses={(200, "text/plain"): OpenApiTypes.STR, (206, "text/plain"): OpenApiTypes.STR,
                   (200, "application/json"): inline_serializer("PresignedBody", {
                       "url": serializers.URLField(), "expires_in": serializers.IntegerField(),
                       "size": serializers.IntegerField(), "sha256": serializers.CharField()})},
        description="The body: whole, by byte range, or (presign=1) as a presigned URL valid "
                    "PRESIGN_GET_EXPIRES seconds.",
    )
    def get(self, request, prompt_id, version_id):
        prompt = request_access(request, prompt_id=prompt_id, need="view", version_id=version_id)
        version = selectors.version_get(prompt=prompt, version_id=version_id)
        if request.query_params.get("presign") in ("1", "true"):
            # Capped: this URL outlives any revocation, so its lifetime is the stale window.
            expires = min(settings.PRESIGN_GET_EXPIRES, settings.PRESIGN_GET_MAX_EXPIRES)
            url = get_blob_store().presign_get(body_object_key(version), expires=expires)
            return Response({"url": url, "expires_in": expires, "size": version.body_size,
                             "sha256": version.body_sha256})
        # A version never changes, but access to it may be revoked: only the owner's
        # browser may keep it; anyone else's must ask again (and be refused) next time.
        owner = request.user.is_authenticated and request.user.pk == prompt.owner_id
        headers = {"ETag": f'"{version.body_sha256}"', "Accept-Ranges": "bytes",
                   "Cache-Control": "private, max-age=31536000, immutable" if owner else "no-store"}
        byte_range = _parse_range(request.headers.get("Range", ""), version.body_size)
        if byte_range:
            start, end = byte_range
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{version.body_size}"
            return HttpResponse(body_range(version, start, end), status=206,
                                content_type="text/plain; charset=utf-8", headers=headers)
        if version.storage == Storage.FULL and version.payload_blob_id:
            # A stored snapshot streams from the store, never whole in memory.
            chunks = get_blob_store().iter_chunks(version.payload_blob.key)
        else:
            chunks = [body_text(version).encode("utf-8")]
        headers["Content-Length"] = str(version.body_size)
        return StreamingHttpResponse(for_request(request, chunks), content_type="text/plain; charset=utf-8",
                                     headers=headers)


class VersionRenderApi(PromptScopedApi):
    @extend_schema(request=RenderSerializer, responses=inline_serializer("Rendered", {
        "system": serializers.CharField(), "body": serializers.CharField(),
        "messages": serializers.ListField(child=serializers.DictField())}))
    def post(self, request, prompt_id, version_id):
        prompt = request_access(request, prompt_id=prompt_id, need="view", version_id=version_id)
        version = selectors.version_get(prompt=prompt, version_id=version_id)
        data = validated(RenderSerializer, request)
        out, messages = version_render(version=version, variables=data["variables"])
        return Response({**out, "messages": messages})


class TreeApi(PromptScopedApi):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(responses=TreeNodeSerializer(many=True),
                   description="Every version with its parent, children, depth and labels (paginated).")
    def get(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="view")
        labels = selectors.version_labels(prompt=prompt)

        def serialize(items):
            children = selectors.version_children(version_ids=[v.pk for v in items])
            return TreeNodeSerializer(items, many=True, context={"children": children, "labels": labels}).data

        return paginated(request, self, selectors.version_list(prompt=prompt), ("number",), serialize)


class HeadsApi(PromptScopedApi):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(responses=VersionSerializer(many=True), description="The tip of every branch.")
    def get(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="view")
        heads = selectors.version_heads(prompt=prompt).select_related("author")
        return paginated(request, self, heads, ("-number",),
                         lambda items: VersionSerializer(items, many=True).data)


def _tools_text(version) -> str:
    return json.dumps(version.tools, indent=2, ensure_ascii=False) + "\n" if version.tools else ""


# What a diff compares: the body (the default), the system text, or the tools (as indented JSON).
DIFF_PARTS = {"body": body_text, "system": lambda version: version.system, "tools": _tools_text}


def _diff_mode(request) -> str:
    mode = request.query_params.get("mode", "line")
    if mode not in ("line", "word"):
        raise DomainError("mode must be 'line' or 'word'.", code="invalid_request", field="mode")
    return mode


def _diff_ends(request, prompt) -> dict:
    ends = {}
    for end in ("from", "to"):
        if not request.query_params.get(end):
            raise DomainError(f"Query parameter {end!r} is required.", code="invalid_request", field=end)
        ends[end] = selectors.version_get(prompt=prompt, version_id=request.query_params[end])
    return ends


class DiffApi(PromptScopedApi):
    @extend_schema(
        parameters=[OpenApiParameter("from", str, required=True), OpenApiParameter("to", str, required=True),
                    OpenApiParameter("mode", str, enum=["line", "word"]),
                    OpenApiParameter("part", str, enum=list(DIFF_PARTS))],
        responses={(200, "text/plain"): OpenApiTypes.STR},
        description="Unified line diff, or git-style word diff ([-old-]{+new+}), streamed, of the body "
                    "(default), the system text or the tools (indented JSON); no hunks: no change.",
    )
    def get(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="view")
        mode = _diff_mode(request)
        part = request.query_params.get("part", "body")
        if part not in DIFF_PARTS:
            raise DomainError(f"part must be one of {', '.join(DIFF_PARTS)}.", code="invalid_request",
                              field="part")
        ends = _diff_ends(request, prompt)
        differ = line_diff if mode == "line" else word_diff
        budget = Budget(settings.PROMPT_DIFF_TIMEOUT_S)
        text, suffix = DIFF_PARTS[part], "" if part == "body" else f" {part}"
        chunks = differ(text(ends["from"]), text(ends["to"]),
                        old_name=f"v{ends['from'].number}{suffix}", new_name=f"v{ends['to'].number}{suffix}",
                        context=settings.PROMPT_DIFF_CONTEXT_LINES, budget=budget)
        first = next(chunks)  # the line matching runs here, so the header can tell
        encoded = (chunk.encode("utf-8") for chunk in itertools.chain([first], chunks))
        return StreamingHttpResponse(for_request(request, encoded),
                                     content_type="text/plain; charset=utf-8",
                                     headers={"X-Diff-Coarse": "true" if budget.coarse else "false"})


class FieldDiffApi(PromptScopedApi):
    @extend_schema(
        parameters=[OpenApiParameter("from", str, required=True), OpenApiParameter("to", str, required=True),
                    OpenApiParameter("mode", str, enum=["line", "word"])],
        responses=OpenApiTypes.OBJECT,
        description="The field-aware diff of two versions: `fields` (model, parameters, variable "
                    "defaults: {field, from, to, changed}), `messages` (system, turns, body, aligned, "
                    "each with its text diff), `tools` and `response_schema` (JSON Patch operations). "
                    "Bounded by PROMPT_DIFF_TIMEOUT_S (`coarse`) and the PROMPT_DIFF_*_MAX_* limits "
                    "(`truncated`); see docs/prompts.md.",
    )
    def get(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="view")
        mode = _diff_mode(request)
        ends = _diff_ends(request, prompt)
        return Response(version_diff(ends["from"], ends["to"], mode=mode,
                                     bodies=(body_text(ends["from"]), body_text(ends["to"]))))


class MergePreviewApi(PromptScopedApi):
    @extend_schema(request=MergePreviewRequestSerializer, responses=OpenApiTypes.OBJECT,
                   description="A three-way merge of two heads against their common ancestor: the merged "
                               "body and system text, or their conflicts (base, ours, theirs) to resolve; "
                               "then create the merge with POST .../versions {parent: ours, merge_parent: "
                               "theirs, body}. `coarse`: matching ran out of PROMPT_DIFF_TIMEOUT_S, so "
                               "changes and conflicts span more lines than they need to.")
    def post(self, request, prompt_id):
        from .merging_service import merge_preview

        prompt = request_access(request, prompt_id=prompt_id, need="view")
        data = validated(MergePreviewRequestSerializer, request)
        return Response(merge_preview(prompt=prompt, ours_id=data["ours"], theirs_id=data["theirs"]))


class UploadApi(PromptScopedApi):
    @extend_schema(request=UploadRequestSerializer, responses={201: UploadSerializer},
                   description="A presigned PUT URL (at most 15 minutes, exactly `size` bytes) for a "
                               "large body; then create a version with body_upload.")
    def post(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="edit")
        size = validated(UploadRequestSerializer, request)["size"]
        return Response(upload_presign(user=request.user, prompt=prompt, size=size),
                        status=status.HTTP_201_CREATED)
