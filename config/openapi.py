"""drf-spectacular postprocessing: the rules the apps' services check (prompts,
labels, sharing, evaluations, webhooks), written into their request schemas.

The serializers state types only (ranges and rules live in services); this hook
adds what those services refuse (ranges, one-of fields, choices, list shapes),
from the same settings and tables, so that a request the schema calls valid is
one the endpoint accepts. What depends on stored state (an id that must exist,
a version that must be a head) cannot be written here.
"""

from __future__ import annotations

from django.conf import settings

from core.error_codes import DomainError
from evals.evaluators import evaluator_list
from inference_protocol.catalog import model_names
from playground.branches import BRANCH_NAME_PATTERN
from playground.splits import MAX_VARIANTS, TOTAL_WEIGHT
from sharing.models import GrantRole, LinkMode
from webhooks.models import WebhookEvent

UUID = {"type": "string", "format": "uuid"}
NO_NUL = "^[^\\x00]*$"


def _one_of(*fields: str) -> dict:
    return {"oneOf": [{"required": [name]} for name in fields]}


def _sampling() -> dict:
    return {
        "model": {"enum": sorted(model_names())},
        "temperature": {"minimum": 0, "maximum": settings.INFERENCE_TEMPERATURE_MAX},
        "top_p": {"minimum": 0, "exclusiveMinimum": True, "maximum": 1},
        "max_tokens": {"minimum": 1, "maximum": settings.INFERENCE_MAX_TOKENS_LIMIT},
        "stop": {"maxItems": settings.INFERENCE_MAX_STOP_SEQUENCES,
                 "items": {"type": "string", "minLength": 1, "pattern": NO_NUL}},
    }


def _takes_no_arguments(evaluator) -> bool:
    if evaluator.check is not None:
        try:
            evaluator.check({})
        except DomainError:
            return False  # regex needs its pattern, json_schema its schema...
    return True


def _evaluators() -> dict:
    # Each by name alone, once (those that need arguments are documented in the description;
    # one evaluator twice, as a name and as an object, needs an `as`).
    plain = sorted(e.name for e in evaluator_list() if _takes_no_arguments(e))
    return {"type": "array", "minItems": 1, "maxItems": 20, "uniqueItems": True,
            "items": {"type": "string", "enum": plain}}


def _rules() -> dict[str, dict]:
    """Component name -> {"properties": {field: keywords to add}, other keywords}."""
    row = {"type": "object", "additionalProperties": False, "properties": {
        "expected": {"nullable": True, "anyOf": [{"type": "string"}, {"type": "number"}]},
        "metadata": {"type": "object"}, "key": UUID}}
    link = {"properties": {"mode": {"enum": list(LinkMode.values)},
                           "role": {"enum": [GrantRole.VIEWER.value]}}}
    version = {
        **_sampling(), "body": {"nullable": False}, "branch": {"pattern": f"^$|{BRANCH_NAME_PATTERN}"},
        # Names are identifiers (templating.NAME): OpenAPI 3.0 has no propertyNames to say it.
        "variables": {"type": "object", "additionalProperties": {
            "type": "string", "nullable": True, "minLength": 1, "pattern": NO_NUL}}}
    return {
        "VersionCreateRequest": {"properties": {**version, "body_upload": {"nullable": False}},
                                 **_one_of("body", "body_upload")},
        # A scratch draft's first version (playground/api_scratch.py): the same fields, inline.
        "ScratchVersionRequest": {"properties": version},
        "BodyUploadRequest": {"properties": {"upload": {"pattern": NO_NUL}}},
        # A file (multipart) or its text; JSON carries the text alone.
        "ImportRequestRequest": _one_of("file", "text"),
        "LabelGateRequestRequest": {"properties": {"evaluator": {"pattern": "\\S"},
                                                   "margin": {"minimum": 0, "maximum": 1}}},
        # require_approval only on a protected label.
        "LabelProtectRequestRequest": {"anyOf": [
            {"not": {"required": ["require_approval"]}},
            {"properties": {"require_approval": {"enum": [False]}}},
            {"required": ["protected"], "properties": {"protected": {"enum": [True]}}}]},
        # The shape check_variants takes (distinct versions, weights adding up to
        # TOTAL_WEIGHT: past what a schema can say).
        "LabelSplitRequestRequest": {"properties": {"variants": {
            "type": "array", "minItems": 2, "maxItems": MAX_VARIANTS, "items": {
                "type": "object", "additionalProperties": False, "required": ["version", "weight"],
                "properties": {"version": UUID, "weight": {"type": "integer", "minimum": 1,
                                                           "maximum": TOTAL_WEIGHT}}}}}},
        "UploadRequestRequest": {"properties": {"size": {"minimum": 1,
                                                         "maximum": settings.PROMPT_BODY_MAX_BYTES}}},
        "GrantCreateRequest": {"properties": {"role": {"enum": list(GrantRole.values)}},
                               **_one_of("username", "team")},
        "LinkCreateRequest": link,
        "UnversionedLinkCreateRequest": link,
        "EndpointCreateRequest": {"properties": {
            # https (http too with WEBHOOK_ALLOW_HTTP), a host (no user info), then no
            # whitespace or control characters.
            "url": {"pattern": ("^https?://" if settings.WEBHOOK_ALLOW_HTTP else "^https://")
                    + "[A-Za-z0-9.-]+(:[0-9]{1,5})?([/?#][^\\s\\x00-\\x1f\\x7f]*)?$",
                    "maxLength": 2000},
            "events": {"type": "array", "minItems": 1, "uniqueItems": True,
                       "items": {"type": "string", "enum": list(WebhookEvent.values)}}}},
        "DatasetCreateRequest": {"properties": {"rows": {"items": row}}},
        # Any other field is refused (unknown_parameter); a name is not only spaces.
        "DatasetUpdateRequest": {"properties": {"name": {"pattern": "\\S"}}, "additionalProperties": False},
        "DatasetVersionCreateRequest": {"properties": {"add": {"items": row},
                                                       "update": {"additionalProperties": row}}},
        "EvalRunCreateRequest": {"properties": {
            "columns": {"type": "array", "minItems": 1, "maxItems": settings.EVAL_RUN_MAX_COLUMNS,
                        "items": {"type": "object", "additionalProperties": False,
                                  "required": ["prompt", "version"],
                                  "properties": {"prompt": UUID, "version": UUID}}},
            "evaluators": _evaluators(), "name": {"pattern": NO_NUL}}},
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
