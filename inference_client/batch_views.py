"""/v1/files and /v1/batches (the Batch API; the work is in inference_client.batch_files
and inference_client.batches).

Not on the chat fast path: these are ordinary DRF views (one key lookup and a
few queries per call)."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.parsers import MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import ApiKey
from core.error_codes import DomainError
from inference_client import batch_files, batches
from inference_client.models import Batch, BatchFile


def _key(request):
    return request.auth if isinstance(request.auth, ApiKey) else None


def _owned(request, model, pk: str, noun: str, code: str):
    """The caller's `model` row with this id; else `code`, naming the `<noun>_id` field."""
    try:
        return model.objects.get(pk=pk, user=request.user)
    except model.DoesNotExist:
        raise DomainError(f"No {noun} with id {pk!r}.", code=code, field=f"{noun}_id") from None


def _file(request, file_id: str) -> BatchFile:
    return _owned(request, BatchFile, file_id, "file", "file_not_found")


def _batch(request, batch_id: str) -> Batch:
    return _owned(request, Batch, batch_id, "batch", "batch_not_found")


# The request shapes batch_files.file_create and batch_create accept (OpenAI's).
FILE_UPLOAD = {"type": "object", "required": ["file", "purpose"], "properties": {
    "file": {"type": "string", "format": "binary", "minLength": 1,  # an empty part is no file
             "description": "JSONL: one request per line."},
    "purpose": {"type": "string", "enum": [BatchFile.Purpose.BATCH.value]}}}
BATCH_CREATE = {"type": "object", "additionalProperties": False, "required": ["input_file_id", "endpoint"],
                "properties": {
                    "input_file_id": {"type": "string", "minLength": 1},
                    "endpoint": {"type": "string", "enum": sorted(batch_files.ENDPOINTS)},
                    "completion_window": {"type": "string", "enum": ["24h"], "default": "24h"},
                    "metadata": {"type": "object", "nullable": True, "maxProperties": 16,
                                 "additionalProperties": {"type": "string", "maxLength": 512}}}}


@extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
class FileListApi(APIView):
    parser_classes = [MultiPartParser]

    @extend_schema(operation_id="v1_files_list", responses=OpenApiTypes.OBJECT)
    def get(self, request):
        files = BatchFile.objects.filter(user=request.user).order_by("-created_at")[:1000]
        return Response({"object": "list", "data": [batch_files.file_body(f) for f in files]})

    @extend_schema(request={"multipart/form-data": FILE_UPLOAD}, responses=OpenApiTypes.OBJECT)
    def post(self, request):
        upload = request.FILES.get("file")
        if upload is None:
            raise DomainError("Send the file as multipart form field 'file'.",
                              code="missing_required_parameter",
                              field="file")
        f = batch_files.file_create(user=request.user, upload=upload, purpose=request.data.get("purpose", ""))
        return Response(batch_files.file_body(f))


@extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
class FileDetailApi(APIView):
    def get(self, request, file_id):
        return Response(batch_files.file_body(_file(request, file_id)))

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT})  # OpenAI's: 200, {"deleted": true}
    def delete(self, request, file_id):
        batch_files.file_delete(_file(request, file_id))
        return Response({"id": file_id, "object": "file", "deleted": True})


@extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
class FileContentApi(APIView):
    def perform_content_negotiation(self, request, force=False):
        # The SDK asks for application/binary; the bytes go out as they are stored.
        return JSONRenderer(), "application/json"

    @extend_schema(responses={(200, "application/jsonl"): OpenApiTypes.STR})  # the lines as stored
    def get(self, request, file_id):
        f = _file(request, file_id)
        lines = (line + b"\n" for line in batch_files.file_lines(f))
        return StreamingHttpResponse(lines, content_type="application/jsonl")


@extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
class BatchListApi(APIView):
    @extend_schema(operation_id="v1_batches_list", responses=OpenApiTypes.OBJECT)
    def get(self, request):
        rows = Batch.objects.filter(user=request.user).order_by("-created_at")[:100]
        return Response({"object": "list", "data": [batches.batch_body(b) for b in rows],
                         "has_more": False})

    @extend_schema(request={"application/json": BATCH_CREATE}, responses=OpenApiTypes.OBJECT)
    def post(self, request):
        data = request.data if isinstance(request.data, dict) else {}
        unknown = sorted(set(data) - set(BATCH_CREATE["properties"]))
        if unknown:
            raise DomainError(f"Unrecognized request argument supplied: {unknown[0]}",
                              code="unknown_parameter", field=unknown[0])
        batch = batches.batch_create(user=request.user, api_key=_key(request),
                                     input_file_id=data.get("input_file_id"), endpoint=data.get("endpoint"),
                                     completion_window=data.get("completion_window", "24h"),
                                     metadata=data.get("metadata"))
        return Response(batches.batch_body(batch))


@extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
class BatchDetailApi(APIView):
    def get(self, request, batch_id):
        return Response(batches.batch_body(_batch(request, batch_id)))


@extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
class BatchCancelApi(APIView):
    def post(self, request, batch_id):
        return Response(batches.batch_body(batches.batch_cancel(batch=_batch(request, batch_id))))
