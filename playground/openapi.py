"""drf-spectacular postprocessing: the rules the playground's services check,
written into its request schemas.

The serializers state types only (ranges and rules live in services); this hook
adds what those services refuse (ranges, one-of fields, choices, list shapes),
from the same settings and tables, so that a request the schema calls valid is
one the endpoint accepts. What depends on stored state (an id that must exist,
a version that must be a head) cannot be written here.
"""

from __future__ import annotations

from django.conf import settings

from core.errors import ApiError
from inference_protocol.catalog import model_names

from .evals.evaluators import evaluator_list
from .sharing.models import GrantRole, LinkMode
from .webhooks.models import WebhookEvent

UUID = {"type": "string", "format": "uuid"}


def _one_of(*fields: str) -> dict:
    return {"oneOf": [{"required": [name]} for name in fields]}


def _sampling() -> dict:
    return {
        "model": {"enum": sorted(model_names())},
        "temperature": {"minimum": 0, "maximum": settings.INFERENCE_TEMPERATURE_MAX},
        "top_p": {"minimum": 0, "exclusiveMinimum": True, "maximum": 1},
        "max_tokens": {"minimum": 1, "maximum": settings.INFERENCE_MAX_TOKENS_LIMIT},
        "stop": {"maxItems": settings.INFERENCE_MAX_STOP_SEQUENCES},
    }


def _takes_no_arguments(evaluator) -> bool:
    if evaluator.check is not None:
        try:
            evaluator.check({})
        except ApiError:
            return False  # regex needs its pattern, json_schema its schema...
    return True


def _evaluators() -> dict:
    # Each by name alone (those that need arguments are documented in the description).
    plain = sorted(e.name for e in evaluator_list() if _takes_no_arguments(e))
    return {"type": "array", "minItems": 1, "maxItems": 20, "uniqueItems": True,
            "items": {"anyOf": [{"type": "string", "enum": plain},
                                {"type": "object", "required": ["name"], "additionalProperties": False,
                                 "properties": {"name": {"type": "string", "enum": plain},
                                                "args": {"type": "object", "maxProperties": 0}}}]}}


def _rules() -> dict[str, dict]:
    """Component name -> {"properties": {field: keywords to add}, other keywords}."""
    row = {"type": "object", "additionalProperties": False, "properties": {
        "expected": {"nullable": True, "anyOf": [{"type": "string"}, {"type": "number"}]},
        "metadata": {"type": "object"}, "key": UUID}}
    return {
        "VersionCreateRequest": {"properties": _sampling(), **_one_of("body", "body_upload")},
        "GrantCreateRequest": {"properties": {"role": {"enum": list(GrantRole.values)}},
                               **_one_of("username", "team")},
        "LinkCreateRequest": {"properties": {"mode": {"enum": list(LinkMode.values)},
                                             "role": {"enum": [GrantRole.VIEWER.value]}}},
        "EndpointCreateRequest": {"properties": {
            "url": {"pattern": "^https?://[^/?#\\s]+", "maxLength": 2000},
            "events": {"type": "array", "minItems": 1, "uniqueItems": True,
                       "items": {"type": "string", "enum": list(WebhookEvent.values)}}}},
        "DatasetCreateRequest": {"properties": {"rows": {"items": row}}},
        "DatasetVersionCreateRequest": {"properties": {"add": {"items": row}}},
        "EvalRunCreateRequest": {"properties": {
            "columns": {"type": "array", "minItems": 1, "maxItems": settings.EVAL_RUN_MAX_COLUMNS,
                        "items": {"type": "object", "additionalProperties": False,
                                  "required": ["prompt", "version"],
                                  "properties": {"prompt": UUID, "version": UUID}}},
            "evaluators": _evaluators()}},
    }


def add_request_rules(result, generator, request, public):
    schemas = result.get("components", {}).get("schemas", {})
    for name, rules in _rules().items():
        schema = schemas.get(name)
        if schema is None:
            continue
        for field, keywords in rules.get("properties", {}).items():
            schema.setdefault("properties", {}).setdefault(field, {}).update(keywords)
        schema.update({k: v for k, v in rules.items() if k != "properties"})
    return result
