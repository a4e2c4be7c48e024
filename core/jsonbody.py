"""JSON request bodies with bounded nesting, for /v1 and every DRF route.

The standard parser recurses once per level: a body like ``[[[[...]]]]`` a few
thousand levels deep raises RecursionError (a 500), and one just under the
interpreter's limit parses, then fails later wherever it is walked again (the
ORM, a serializer). Bodies deeper than JSON_MAX_DEPTH are refused at parsing
with the stable code ``json_too_deep``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any, cast

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.serializers import BaseSerializer


class JsonTooDeep(ValueError):
    pass


def _too_deep() -> JsonTooDeep:
    return JsonTooDeep(f"The JSON body is nested more than {settings.JSON_MAX_DEPTH} levels deep.")


def check_depth(value: Any, limit: int) -> None:
    """Iterative, so that checking cannot itself run out of stack."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    raise _too_deep()
                stack.append((child, depth + 1))


def json_loads(raw: bytes | str) -> Any:
    """``json.loads``, raising JsonTooDeep (a ValueError) past JSON_MAX_DEPTH."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise _too_deep() from None
    if isinstance(value, dict | list):
        check_depth(value, settings.JSON_MAX_DEPTH)
    return value


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser with the nesting bound (REST_FRAMEWORK's DEFAULT_PARSER_CLASSES)."""

    def parse(self, stream: IO[Any], media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(str(_too_deep()), code="json_too_deep") from None
        if isinstance(data, dict | list):
            try:
                check_depth(data, settings.JSON_MAX_DEPTH)
            except JsonTooDeep as exc:
                raise ParseError(str(exc), code="json_too_deep") from None
        return data


def validated(serializer_class: type[BaseSerializer[Any]], request: Request) -> dict[str, Any]:
    """A DRF request's body as `serializer_class` validates it, or its
    ValidationError (a 400 with the field's code, core/errors.py)."""
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return cast(dict[str, Any], serializer.validated_data)
