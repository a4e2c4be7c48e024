"""Evaluations REST API: datasets, versions, rows, import/export (their links
and grants are sharing.api's, mounted in urls.py; evaluators and runs are in
api_runs.py, a run's results in api_results.py). Views parse, check access, call a service or a selector and
serialize; nothing else."""

from __future__ import annotations

from uuid import UUID

from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from core.error_codes import DomainError
from core.ids import is_uuid
from core.jsonbody import BoundedJSONParser, validated
from core.pagination import Page, paginated

from . import datasets as services
from .import_job import dataset_import_start
from .models import DatasetImport, DatasetVersion
from .permissions import datasets_visible_to, request_dataset
from .serializers import (
    DatasetCreateSerializer,
    DatasetRowSerializer,
    DatasetSerializer,
    DatasetUpdateSerializer,
    DatasetVersionCreateSerializer,
    DatasetVersionSerializer,
    ImportRequestSerializer,
    ImportResultSerializer,
    ImportTextRequestSerializer,
    RowPageSerializer,
)

PAGE_MAX = 500
IMPORT_FORMATS = ("csv", "tsv", "jsonl")
# The ranges int_param checks, in the schema.
START = {"type": "integer", "minimum": 0}
LIMIT = {"type": "integer", "minimum": 1, "maximum": PAGE_MAX}


def _version(dataset, version_id) -> DatasetVersion:
    version = (DatasetVersion.objects.filter(dataset=dataset, pk=version_id).first()
               if is_uuid(version_id) else None)
    if version is None:
        raise DomainError("Dataset version not found.", code="version_not_found",
                          field="version")
    return version


def int_param(request, name: str, default: int, *, low: int = 0, high: int | None = None) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise DomainError(f"{name} must be an integer.", code="invalid_request", field=name) from None
    if value < low or (high is not None and value > high):
        raise DomainError(f"{name} must be from {low} to {high}.", code="out_of_range", field=name)
    return value


def refuse_unknown_params(request, allowed: set[str]) -> None:
    unknown = sorted(set(request.query_params) - allowed)
    if unknown:
        raise DomainError(f"Unrecognized query parameter: {unknown[0]}.", code="unknown_parameter",
                          field=unknown[0])


class DatasetListApi(APIView):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(responses=DatasetSerializer(many=True))
    def get(self, request):
        visible = datasets_visible_to(user=request.user)
        return paginated(request, self, visible, ("-updated_at", "-created_at"),
                         lambda items: DatasetSerializer(items, many=True).data)

    @extend_schema(request=DatasetCreateSerializer, responses={201: DatasetSerializer},
                   description="A dataset, with a first version when `rows` are given.")
    def post(self, request):
        v = validated(DatasetCreateSerializer, request)
        if v["rows"]:  # check the rows before anything is written
            for i, row in enumerate(v["rows"]):
                services._api_row(row, f"rows[{i}]")
        dataset = services.dataset_create(owner=request.user, name=v["name"], description=v["description"])
        if v["rows"]:
            services.dataset_version_create(dataset=dataset, author=request.user, add=v["rows"],
                                            message="created")
        return Response(DatasetSerializer(dataset).data, status=status.HTTP_201_CREATED)


class DatasetDetailApi(APIView):
    permission_classes = [AllowAny]  # link holders may read; request_dataset decides every call

    @extend_schema(responses=DatasetSerializer)
    def get(self, request, dataset_id):
        return Response(DatasetSerializer(request_dataset(request, dataset_id=dataset_id, need="read")).data)

    @extend_schema(request=DatasetUpdateSerializer, responses=DatasetSerializer,
                   description="Rename it or change its description (owner and editors).")
    def patch(self, request, dataset_id):
        dataset = request_dataset(request, dataset_id=dataset_id, need="edit")
        fields = set(request.data) if isinstance(request.data, dict) else set()
        unknown = sorted(fields - {"name", "description"})
        if unknown:
            raise DomainError(f"Unrecognized field: {unknown[0]}.", code="unknown_parameter",
                              field=unknown[0])
        dataset = services.dataset_update(dataset=dataset, **validated(DatasetUpdateSerializer, request))
        return Response(DatasetSerializer(dataset).data)

    @extend_schema(responses={204: None},
                   description="Owner only. Refused with 409 dataset_in_use while a run used one of its "
                               "versions (runs keep what they used) or a label gate names it.")
    def delete(self, request, dataset_id):
        services.dataset_delete(dataset=request_dataset(request, dataset_id=dataset_id, need="own"))
        return Response(status=status.HTTP_204_NO_CONTENT)


class DatasetVersionListApi(APIView):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    permission_classes = [AllowAny]  # link holders may read; request_dataset decides every call

    @extend_schema(responses=DatasetVersionSerializer(many=True))
    def get(self, request, dataset_id):
        dataset = request_dataset(request, dataset_id=dataset_id, need="read")
        return paginated(request, self, dataset.versions.select_related("author"), ("-number",),
                         lambda items: DatasetVersionSerializer(items, many=True).data)

    @extend_schema(request=DatasetVersionCreateSerializer, responses={201: DatasetVersionSerializer},
                   description="A new version: the base's rows, minus `delete`, with `update`, plus `add`. "
                               "Versions never change; this is how rows are edited.")
    def post(self, request, dataset_id):
        dataset = request_dataset(request, dataset_id=dataset_id, need="edit")
        v = validated(DatasetVersionCreateSerializer, request)
        version = services.dataset_version_create(dataset=dataset, author=request.user,
                                                  base_version_id=v["base"], add=v["add"], update=v["update"],
                                                  delete=[str(k) for k in v["delete"]], message=v["message"])
        return Response(DatasetVersionSerializer(version).data, status=status.HTTP_201_CREATED)


class DatasetVersionDetailApi(APIView):
    permission_classes = [AllowAny]  # link holders may read; request_dataset decides every call

    @extend_schema(responses=DatasetVersionSerializer)
    def get(self, request, dataset_id, version_id):
        dataset = request_dataset(request, dataset_id=dataset_id, need="read")
        return Response(DatasetVersionSerializer(_version(dataset, version_id)).data)


class DatasetRowsApi(APIView):
    permission_classes = [AllowAny]  # link holders may read; request_dataset decides every call

    @extend_schema(parameters=[OpenApiParameter("start", START, description="First row index (default 0)"),
                               OpenApiParameter("limit", LIMIT,
                                                description=f"Rows (default 100, max {PAGE_MAX})")],
                   responses=RowPageSerializer,
                   description="Rows by index: a page of a large dataset without counting the whole.")
    def get(self, request, dataset_id, version_id):
        refuse_unknown_params(request, {"start", "limit"})
        dataset = request_dataset(request, dataset_id=dataset_id, need="read")
        version = _version(dataset, version_id)
        start = int_param(request, "start", 0)
        limit = int_param(request, "limit", 100, low=1, high=PAGE_MAX)
        rows = version.rows.filter(index__gte=start, index__lt=start + limit).order_by("index")
        nxt = start + limit if start + limit < version.row_count else None
        return Response({"rows": DatasetRowSerializer(rows, many=True).data, "next": nxt,
                         "row_count": version.row_count})


class DatasetExportApi(APIView):
    permission_classes = [AllowAny]  # link holders may read; request_dataset decides every call

    @extend_schema(parameters=[OpenApiParameter("as", str, enum=["csv", "jsonl"],
                                                description="File type (default jsonl)")],
                   responses={(200, "application/jsonl"): OpenApiTypes.STR,
                              (200, "text/csv"): OpenApiTypes.STR})
    def get(self, request, dataset_id, version_id):
        refuse_unknown_params(request, {"as"})
        dataset = request_dataset(request, dataset_id=dataset_id, need="read")
        version = _version(dataset, version_id)
        fmt = request.query_params.get("as", "jsonl")
        if fmt not in ("csv", "jsonl"):
            raise DomainError("as must be csv or jsonl.", code="invalid_format", field="as")
        response = StreamingHttpResponse(services.dataset_export(version=version, fmt=fmt),
                                         content_type="text/csv" if fmt == "csv" else "application/jsonl")
        filename = f"{dataset.name[:50]}-v{version.number}.{fmt}"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


class DatasetImportApi(APIView):
    # A file comes as multipart; its text alone, as JSON.
    parser_classes = [MultiPartParser, BoundedJSONParser]

    @extend_schema(request={"multipart/form-data": ImportRequestSerializer,
                            "application/json": ImportTextRequestSerializer},
                   responses={200: ImportResultSerializer, 201: ImportResultSerializer},
                   description="Import CSV, TSV (a spreadsheet's copied cells) or JSONL rows as a new "
                               "version (appended to `base`, or replacing its rows). Every bad row is "
                               "reported (line, code, message); with errors nothing is written unless "
                               "`skip_invalid`. `dry_run` previews. A file over "
                               "EVAL_IMPORT_BACKGROUND_BYTES imports in the background: 202 with the "
                               "import's status URL.")
    def post(self, request, dataset_id):
        dataset = request_dataset(request, dataset_id=dataset_id, need="edit")
        v = validated(ImportRequestSerializer, request)
        upload, text, fmt = v.get("file"), v.get("text"), v.get("format")
        if (upload is None) == (text is None):
            raise DomainError("Give exactly one of file or text.", code="file_required", field="file")
        if upload is not None:
            if upload.size > settings.EVAL_IMPORT_MAX_BYTES:
                raise DomainError(f"The file is larger than {settings.EVAL_IMPORT_MAX_BYTES} bytes.",
                                  code="file_too_large", field="file")
            fmt = fmt or {"csv": "csv", "tsv": "tsv", "jsonl": "jsonl", "ndjson": "jsonl"}.get(
                upload.name.rpartition(".")[2].lower())
            try:
                text = upload.read().decode("utf-8-sig")
            except UnicodeDecodeError:
                raise DomainError("The file is not UTF-8 text.", code="file_not_utf8", field="file") from None
        if fmt is None:
            raise DomainError("Say the format (csv, tsv or jsonl): the file name does not.",
                              code="invalid_format", field="format")
        if fmt not in IMPORT_FORMATS:
            raise DomainError("format must be csv, tsv or jsonl.", code="invalid_format", field="format")
        data_bytes = text.encode()
        if len(data_bytes) > settings.EVAL_IMPORT_BACKGROUND_BYTES and not v["dry_run"]:
            job = dataset_import_start(dataset=dataset, author=request.user, data=data_bytes, fmt=fmt,
                                       base_version_id=_import_base(dataset, v),
                                       replace=v["mode"] == "replace", skip_invalid=v["skip_invalid"],
                                       message=v["message"])
            return Response({"import": _import_body(job)}, status=status.HTTP_202_ACCEPTED)
        rows, errors = services.parse_rows(fmt=fmt, text=text)
        body = {"valid": len(rows), "errors": errors[:1000], "error_count": len(errors),
                "preview": rows[:20], "version": None}
        if v["dry_run"]:
            return Response(body)
        if errors and not v["skip_invalid"]:
            raise DomainError(f"{len(errors)} rows do not import (first: line {errors[0]['line']}: "
                              f"{errors[0]['message']}). Fix them, or import with skip_invalid.",
                              code="invalid_rows", field="file",
                              extra={"errors": errors[:1000], "error_count": len(errors)})
        if not rows:
            raise DomainError("The file has no rows.", code="dataset_empty", field="file")
        version = services.dataset_version_create(dataset=dataset, author=request.user,
                                                  base_version_id=_import_base(dataset, v),
                                                  add=rows, replace=v["mode"] == "replace",
                                                  message=v["message"] or f"import ({fmt}, {len(rows)} rows)")
        body["version"] = DatasetVersionSerializer(version).data
        return Response(body, status=status.HTTP_201_CREATED)


def _import_base(dataset, v) -> UUID | None:
    """The version an import starts from: `base`, else (appending) the latest one."""
    if v["base"] is None and v["mode"] == "append":
        latest = dataset.versions.order_by("-number").first()
        return latest.pk if latest else None
    return v["base"]


def _import_body(job) -> dict:
    return {"id": str(job.pk), "status": job.status, "lines_total": job.lines_total,
            "lines_done": job.lines_done,
            "valid": job.valid, "error_count": job.error_count, "errors": job.errors,
            "error": {"code": job.error_code, "message": job.error_message} if job.error_code else None,
            "version": DatasetVersionSerializer(job.version).data if job.version_id else None,
            "url": f"/api/datasets/{job.dataset_id}/imports/{job.pk}"}


class DatasetImportStatusApi(APIView):
    @extend_schema(responses=OpenApiTypes.OBJECT,
                   description="A background import: queued, parsing (lines_done of lines_total), writing, "
                               "done (with the new version) or failed (with the code and the bad rows).")
    def get(self, request, dataset_id, import_id):
        dataset = request_dataset(request, dataset_id=dataset_id, need="view")
        job = DatasetImport.objects.filter(dataset=dataset, pk=import_id).select_related("version").first()
        if job is None:
            raise DomainError("Import not found.", code="import_not_found")
        return Response(_import_body(job))
