"""GET /api/prompts/<id>/versions/<vid>/export: runnable code for a version."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from . import selectors
from .api import PromptScopedApi
from .calls.export import LANGUAGES, export_base_url, version_export
from .permissions import request_access


class VersionExportApi(PromptScopedApi):
    @extend_schema(
        parameters=[OpenApiParameter("lang", str, enum=list(LANGUAGES),
                                     description="Only this language (repeatable or comma-separated)"),
                    OpenApiParameter("label", str, description="Label the by-reference form runs")],
        responses=OpenApiTypes.OBJECT,
        description="curl, Python (httpx, openai SDK) and JavaScript (fetch) calls of this version: "
                    "inline (frozen model, parameters and text; variables as parameters) and by "
                    "reference (a label's or this version's run route). The API key is read from "
                    "PROMPTYARD_API_KEY; no snippet contains a secret.")
    def get(self, request, prompt_id, version_id):
        prompt = request_access(request, prompt_id=prompt_id, need="view", version_id=version_id)
        version = selectors.version_get(prompt=prompt, version_id=version_id)
        langs = [lang for value in request.query_params.getlist("lang") for lang in value.split(",") if lang]
        return Response(version_export(version=version, base_url=export_base_url(request),
                                       langs=langs or None, label=request.query_params.get("label") or None))
