"""drf-spectacular postprocessing: the run routes (plain async views, like /v1)
in the OpenAPI schema.

- POST /api/prompts/{prompt_id}/versions/{version_id}/run and .../labels/{name}/run:
  a saved version, frozen model and parameters (inference_client/prompt_runs.py);
- POST /api/prompts/{prompt_id}/run and /api/playground/run: the playground's
  run of the editor's state, stored in the run history (playground_runs.py).

The shapes follow the checks playground.calls.builder.check_run_request and
playground.runs.run_build make; the answer is /v1/chat/completions' (refusals
in the one error shape, added by core/openapi.py).
"""

from __future__ import annotations

from typing import Any

from inference_client.openapi import REF, sampling_properties
from playground.calls.builder import FROZEN_FIELDS
from playground.models import LABEL_NAME_PATTERN
from playground.runs import PARAM_FIELDS
from playground.splits import MAX_USER_KEY

_VARIABLES = {"type": "object", "additionalProperties": {"type": "string"},
              "description": "Template variables: name -> value (a declared variable without a default "
                             "is required; an undeclared one is refused)."}
_STREAM = {"type": "boolean", "default": False, "description": "Answer as server-sent events."}


def _version_run_request() -> dict:
    return {"type": "object", "additionalProperties": False,
            "description": "The version's model and parameters apply; setting one of them here is "
                           f"400 frozen_parameter ({', '.join(sorted(FROZEN_FIELDS))}).",
            "properties": {"variables": _VARIABLES, "stream": _STREAM,
                           "user": {"type": "string", "minLength": 1, "maxLength": MAX_USER_KEY,
                                    "description": "Your end user: picks a split label's variant "
                                                   "(the same user, the same variant)."}}}


def _playground_run_request() -> dict:
    sampling = sampling_properties(0)
    params: dict[str, Any] = {name: sampling[name] for name in PARAM_FIELDS if name in sampling}
    params.update({
        "model": {"type": "string", "description": "A model of GET /v1/models."},
        "tools": {"type": "array", "items": {"type": "object"}, "nullable": True},
        "tool_choice": {"nullable": True, "anyOf": [
            {"type": "string", "enum": ["none", "auto", "required"]}, {"type": "object"}]},
        "response_format": {"type": "object", "nullable": True},
    })
    params["max_tokens"] = {**params["max_tokens"], "default": None}
    return {"type": "object", "additionalProperties": False,
            "description": "The editor's state, rendered and sent by the server; the run is kept in "
                           "the run history (its id in the x-playground-run header).",
            "properties": {
                "version": {"type": "string", "format": "uuid", "nullable": True,
                            "description": "The saved version the editor started from (null: none)."},
                "system": {"type": "string"}, "body": {"type": "string", "description": "The last user "
                                                       "message (a template)."},
                "messages": {"type": "array", "items": {"type": "object"},
                             "description": "The turns between system and body, as a version keeps them."},
                "variables": _VARIABLES, "stream": _STREAM, **params}}


def _operation(operation_id: str, summary: str, request: str, parameters: list[dict]) -> dict:
    return {"post": {
        "operationId": operation_id, "summary": summary, "tags": ["runs"],
        "security": [{"ApiKey": []}, {"cookieAuth": []}],
        "parameters": parameters,
        "requestBody": {"required": False,
                        "content": {"application/json": {"schema": {"$ref": REF + request}}}},
        "responses": {"200": {"description": "A chat.completion, or its chunks as server-sent events.",
                              "content": {"application/json": {"schema": {"$ref": REF + "ChatCompletion"}},
                                          "text/event-stream": {"schema": {"type": "object"}}}}},
    }}


def _path(name: str, description: str, **schema) -> dict:
    return {"in": "path", "name": name, "required": True, "description": description,
            "schema": {"type": "string", **schema}}


PROMPT = _path("prompt_id", "The prompt.", format="uuid")


def add_run_operations(result, generator, request, public):
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.update({"VersionRunRequest": _version_run_request(),
                    "PlaygroundRunRequest": _playground_run_request()})
    result.setdefault("paths", {}).update({
        "/api/prompts/{prompt_id}/versions/{version_id}/run": _operation(
            "prompts_versions_run", "Run a saved version", "VersionRunRequest",
            [PROMPT, _path("version_id", "The version.", format="uuid")]),
        "/api/prompts/{prompt_id}/labels/{name}/run": _operation(
            "prompts_labels_run", "Run the version a label points at", "VersionRunRequest",
            [PROMPT, _path("name", "The label.", pattern=LABEL_NAME_PATTERN)]),
        "/api/prompts/{prompt_id}/run": _operation(
            "prompts_playground_run", "Run the playground's editor state", "PlaygroundRunRequest", [PROMPT]),
        "/api/playground/run": _operation(
            "playground_scratch_run", "Run the scratch playground", "PlaygroundRunRequest", []),
    })
    return result
