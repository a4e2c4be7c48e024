"""A prompt's whole history as one JSON file: GET /api/prompts/<id>/history-export,
POST /api/prompts/import (playground/portability.py; the format: docs/prompts.md)."""

import re

from django.conf import settings
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from core.error_codes import DomainError

from .api import PromptScopedApi
from .permissions import request_access
from .portability import history_export, history_import


class HistoryExportApi(PromptScopedApi):
    renderer_classes = [JSONRenderer]  # a browser's link downloads the file, not the browsable page

    @extend_schema(responses=OpenApiTypes.OBJECT,
                   description="Every version (numbers, parents, merge parents, parameters, body and its "
                               "SHA-256) and every label (target, split, protection) as one "
                               "`promptyard.prompt-history` document (format_version 1), sent as a file "
                               "download. Anyone who may view every version of the prompt.")
    def get(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="view")
        name = re.sub(r"[^a-z0-9]+", "-", prompt.title.lower()).strip("-")[:60] or "prompt"
        return Response(history_export(prompt), headers={
            "Content-Disposition": f'attachment; filename="{name}.promptyard.json"'})


class HistoryImportApi(APIView):
    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: inline_serializer("ImportedPrompt", {
        "id": serializers.UUIDField(), "url": serializers.CharField(), "title": serializers.CharField(),
        "versions": serializers.IntegerField(), "labels": serializers.IntegerField()})},
        description="Import a `promptyard.prompt-history` document (the body) as a new prompt of your own: "
                    "its versions with their numbers, parents, merges and body hashes, and its labels. "
                    "Bounded by PROMPT_IMPORT_MAX_BYTES and PROMPT_IMPORT_MAX_VERSIONS; nothing is "
                    "created unless all of it is.")
    def post(self, request):
        limit = settings.PROMPT_IMPORT_MAX_BYTES
        # `serve` refuses a larger body while it arrives (REQUEST_BODY_LIMITS); this covers other servers.
        declared = request.META.get("CONTENT_LENGTH") or ""
        if declared.isdigit() and int(declared) > limit:
            raise DomainError(f"The request body is larger than {limit} bytes (PROMPT_IMPORT_MAX_BYTES).",
                              code="request_too_large",
                              extra={"limit": "PROMPT_IMPORT_MAX_BYTES", "max_bytes": limit})
        prompt = history_import(owner=request.user, document=request.data)
        return Response({"id": str(prompt.pk), "url": reverse("prompt-playground", args=[prompt.pk]),
                         "title": prompt.title, "versions": prompt.version_count,
                         "labels": prompt.labels.count()}, status=status.HTTP_201_CREATED)
