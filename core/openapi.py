"""drf-spectacular postprocessing: what every API operation can answer besides its
documented success, so clients and the fuzzer (tests/test_fuzz_api.py) read the
schema as the API behaves.

`AutoSchema` documents PATCH and DELETE bodies as the APIViews read them, and
`require_bodies` marks a body required when its schema requires a field.

`add_links` writes OpenAPI links from each create to what it created (read,
update, delete, and actions on it), so schemathesis's stateful phase and client
generators follow the chains.

Every operation can refuse a request (bad input, no or a wrong key, no access, not
found, a method or media type it does not take, a rate limit) with the one error
shape of core/errors.py; that is documented once, as the operation's `4XX`
response. A 5xx is never documented: it is a bug.
"""

import re
from typing import Any

import drf_spectacular.openapi
from rest_framework.generics import GenericAPIView

ERROR_SCHEMA = {
    "type": "object",
    "description": "Every API error (core/errors.py). `type` and `param` repeat `code` and "
                   "`field` the way OpenAI's SDKs read errors.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "Stable, machine-readable."},
                "message": {"type": "string"},
                "field": {"type": "string", "nullable": True},
                "type": {"type": "string"},
                "param": {"type": "string", "nullable": True},
            },
            "required": ["code", "message"],
        },
    },
    "required": ["error"],
}

_METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}


def add_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault("Error", ERROR_SCHEMA)
    error = {"description": "The request was refused (the body says why, with a stable code).",
             "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method not in _METHODS:
                continue
            responses = operation.setdefault("responses", {})
            if not any(str(code).startswith("4") for code in responses):
                responses["4XX"] = error
    return result


def require_bodies(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """A request body whose schema requires a field (or one of several) is itself
    required: an empty request is refused the way one missing the field is.
    drf-spectacular says so only for serializers with a required field."""
    schemas = result.get("components", {}).get("schemas", {})
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            body: Any = operation.get("requestBody") if method in _METHODS else None
            for media in (body or {}).get("content", {}).values():
                schema = media.get("schema", {})
                if "$ref" in schema:
                    schema = schemas.get(schema["$ref"].rsplit("/", 1)[-1], {})
                if schema.get("required") or schema.get("oneOf"):
                    body["required"] = True
    return result


def _params(path: str) -> list[str]:
    return re.findall(r"{(\w+)}", path)


def _created_id(operation: dict[str, Any], schemas: dict[str, Any]) -> str | None:
    """The status of a create whose JSON body names the new object's `id`."""
    for status in ("201", "200"):
        media = operation.get("responses", {}).get(status, {}).get("content", {}).get("application/json")
        schema = (media or {}).get("schema", {})
        if "$ref" in schema:
            schema = schemas.get(schema["$ref"].rsplit("/", 1)[-1], {})
        if "id" in schema.get("properties", {}):
            return status
    return None


def add_links(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """A create (POST on a collection, answering with the new object's `id`) links
    to every operation on `<collection>/{id}` and on its actions
    (`<collection>/{id}/<action>`), the collection's own path parameters passed on."""
    paths = result.get("paths", {})
    schemas = result.get("components", {}).get("schemas", {})
    for path, operations in paths.items():
        create = operations.get("post")
        status = _created_id(create, schemas) if create else None
        if status is None:
            continue
        base = path.rstrip("/")
        outer = _params(path)
        links: dict[str, Any] = {}
        for target, target_ops in paths.items():
            inner = _params(target)
            head = re.match(re.escape(base) + r"/{(\w+)}(?:/[\w-]+)?/?$", target)
            if not head or inner != [*outer, head.group(1)]:
                continue
            parameters = {name: f"$request.path.{name}" for name in outer}
            parameters[head.group(1)] = "$response.body#/id"
            for method, target_op in target_ops.items():
                if method in _METHODS and "operationId" in target_op:
                    links[target_op["operationId"]] = {"operationId": target_op["operationId"],
                                                       "parameters": parameters}
        if links:
            create["responses"][status]["links"] = links
    return result


class AutoSchema(drf_spectacular.openapi.AutoSchema):
    """drf-spectacular's, with request bodies documented as the views read them:
    - a PATCH body whole: DRF makes a serializer partial only in a generic view's
      partial_update, and these APIViews validate PATCH bodies with every required field;
    - a DELETE body where the view names one (`extend_schema(request=...)`: removing a
      team member by username), which drf-spectacular leaves out for DELETE."""

    _named_body_only = False

    def _get_request_body(self, direction: str = "request") -> Any:
        if self.method != "DELETE":
            return super()._get_request_body(direction)
        self._named_body_only, self.method = True, "POST"
        try:
            return super()._get_request_body(direction)
        finally:
            self._named_body_only, self.method = False, "DELETE"

    def _get_serializer(self) -> Any:
        # A DELETE's body only where extend_schema names it: none is guessed.
        return None if self._named_body_only else super()._get_serializer()

    def _get_request_for_media_type(self, serializer: Any, direction: str = "request") -> Any:
        if self.method != "PATCH" or isinstance(self.view, GenericAPIView):
            return super()._get_request_for_media_type(serializer, direction)
        try:
            self.method = "POST"
            return super()._get_request_for_media_type(serializer, direction)
        finally:
            self.method = "PATCH"
