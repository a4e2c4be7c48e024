"""drf-spectacular postprocessing: /v1/chat/completions, /v1/completions and
/v1/embeddings in the OpenAPI schema.

They are plain async Django views (views.py: no DRF on the hot path), which
drf-spectacular does not see; this hook writes their operations by hand, from
the same limits inference_client.validation and request_params enforce, so that
a body the schema calls valid is one the gateway accepts (the model may still refuse a feature it
lacks: logprobs, tools, response_format). Each is refused in the one error shape
(core/openapi.py adds the `4XX`); a 5xx is never documented.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from inference_client.idempotency import MAX_KEY_LENGTH
from inference_client.request_params import PROMPT_LABEL
from inference_client.validation import TEXT_DEFAULT_MAX_TOKENS, TEXT_MAX_LOGPROBS
from inference_protocol import config, features
from inference_protocol.validation import SEED_MAX

REF = "#/components/schemas/"


def _model(generating: bool) -> dict:
    names = sorted(name for name, spec in config.current().models.items()
                   if features.generates(spec) == generating)
    out = {"type": "string", "description": "A model of GET /v1/models."}
    return {**out, "enum": names} if names else {**out, "minLength": 1}


USER = {"type": "string", "maxLength": 256, "pattern": "^[^\\x00]*$", "nullable": True,
        "description": "Your end user (kept in the usage records; no NUL)."}


def sampling_properties(default_max_tokens: int) -> dict:
    stop = {"type": "string", "minLength": 1}
    return {
        "max_tokens": {"type": "integer", "minimum": 1, "maximum": settings.INFERENCE_MAX_TOKENS_LIMIT,
                       "nullable": True, "default": default_max_tokens,
                       "description": "Tokens to generate at most; with the input, within the "
                                      "model's context window (else 400 max_tokens_exceeded)."},
        "temperature": {"type": "number", "minimum": 0, "maximum": settings.INFERENCE_TEMPERATURE_MAX,
                        "nullable": True, "default": 1},
        "top_p": {"type": "number", "exclusiveMinimum": True, "minimum": 0, "maximum": 1,
                  "nullable": True, "default": 1},
        "stop": {"nullable": True, "anyOf": [stop, {"type": "array", "items": stop,
                                                    "maxItems": settings.INFERENCE_MAX_STOP_SEQUENCES}]},
        "seed": {"type": "integer", "minimum": 0, "maximum": SEED_MAX, "nullable": True},
        "n": {"type": "integer", "minimum": 1, "maximum": settings.INFERENCE_MAX_N, "nullable": True,
              "default": 1, "description": "Choices to generate."},
        "user": USER,
        "semantic_cache": {"type": "boolean", "nullable": True, "default": False,
                           "description": "Answer from the semantic prompt cache too."},
    }


def _streaming(request: str) -> dict:
    """`stream_options` only with `stream: true` (else 400), as two shapes."""
    return {"anyOf": [
        {"allOf": [{"$ref": REF + request}], "not": {"required": ["stream_options"]},
         "properties": {"stream": {"type": "boolean", "enum": [False], "nullable": True}}},
        {"allOf": [{"$ref": REF + request}], "required": ["stream"],
         "properties": {"stream": {"type": "boolean", "enum": [True]},
                        "stream_options": {"type": "object", "additionalProperties": False,
                                           "properties": {"include_usage": {"type": "boolean"}},
                                           "nullable": True}}},
    ]}


def _text(min_length: int = 1) -> dict:
    return {"type": "string", "minLength": min_length}


_TEXT_PART = {"type": "object", "additionalProperties": False, "required": ["type", "text"],
              "properties": {"type": {"type": "string", "enum": ["text"]}, "text": _text()}}
_TOOL_CALL = {"type": "object", "required": ["type", "id", "function"],
              "properties": {"type": {"type": "string", "enum": ["function"]}, "id": _text(),
                             "function": {"type": "object", "required": ["name", "arguments"],
                                          "properties": {"name": _text(), "arguments": {
                                              "type": "string", "description": "JSON text."}}}}}

SCHEMAS = {
    "ChatMessage": {
        "description": "A turn: text (or text parts), an assistant's tool calls, or a tool's result. "
                       "Only text parts are accepted; the last message must not be empty.",
        "anyOf": [
            {"type": "object", "additionalProperties": False, "required": ["role", "content"],
             "properties": {"role": {"type": "string", "enum": ["system", "developer", "user", "assistant"]},
                            "content": {"anyOf": [_text(), {"type": "array", "minItems": 1,
                                                            "items": {"$ref": REF + "TextPart"}}]},
                            "name": {"type": "string"}}},
            {"type": "object", "additionalProperties": False, "required": ["role", "tool_calls"],
             "properties": {"role": {"type": "string", "enum": ["assistant"]},
                            "content": {"type": "string", "nullable": True},
                            "tool_calls": {"type": "array", "minItems": 1, "items": _TOOL_CALL}}},
            {"type": "object", "additionalProperties": False, "required": ["role", "tool_call_id", "content"],
             "properties": {"role": {"type": "string", "enum": ["tool"]}, "tool_call_id": _text(),
                            "content": _text()}},
        ]},
    "TextPart": _TEXT_PART,
    "Usage": {"type": "object", "required": ["prompt_tokens", "total_tokens"],
              "properties": {"prompt_tokens": {"type": "integer"}, "completion_tokens": {"type": "integer"},
                             "total_tokens": {"type": "integer"}}},
}


def _chat_request() -> dict:
    return {
        "type": "object", "required": ["model", "messages"],
        "description": "OpenAI's chat completion request. Any other OpenAI parameter is refused "
                       "(400 unsupported_parameter) unless null or its neutral value; an unknown "
                       "one is 400 unknown_parameter.",
        "properties": {
            "model": _model(generating=True),
            "messages": {"type": "array", "minItems": 1, "items": {"$ref": REF + "ChatMessage"}},
            "max_completion_tokens": {"type": "integer", "minimum": 1, "nullable": True,
                                      "maximum": settings.INFERENCE_MAX_TOKENS_LIMIT,
                                      "description": "max_tokens' newer name (wins over it)."},
            **sampling_properties(settings.INFERENCE_DEFAULT_MAX_TOKENS),
            "stream": {"type": "boolean", "nullable": True, "default": False},
            "stream_options": {"type": "object", "nullable": True},
            "response_format": {"type": "object", "nullable": True, "required": ["type"],
                                "description": "text, json_object, or json_schema with "
                                               "{name, schema, strict}; needs a model that has it.",
                                "properties": {"type": {"type": "string",
                                                        "enum": ["text", "json_object", "json_schema"]}}},
            "logprobs": {"type": "boolean", "nullable": True},
            "top_logprobs": {"type": "integer", "minimum": 0, "maximum": settings.INFERENCE_MAX_TOP_LOGPROBS,
                             "nullable": True, "description": "Needs logprobs: true."},
            "tools": {"type": "array", "nullable": True, "items": {"type": "object"},
                      "description": "Function tools (needs a model that has them)."},
            "tool_choice": {"nullable": True, "anyOf": [
                {"type": "string", "enum": ["none", "auto", "required"]}, {"type": "object"}]},
            "parallel_tool_calls": {"type": "boolean", "nullable": True},
        },
        "additionalProperties": False,
    }


def _text_request() -> dict:
    return {
        "type": "object", "required": ["model", "prompt"], "additionalProperties": False,
        "description": "OpenAI's legacy completion request: one raw prompt, no chat template.",
        "properties": {
            "model": _model(generating=True),
            "prompt": {"anyOf": [_text(), {"type": "array", "items": _text(), "minItems": 1, "maxItems": 1}],
                       "description": "One prompt (a one-element array is accepted)."},
            **sampling_properties(TEXT_DEFAULT_MAX_TOKENS),
            "stream": {"type": "boolean", "nullable": True, "default": False},
            "stream_options": {"type": "object", "nullable": True},
            "logprobs": {"type": "integer", "minimum": 0, "maximum": TEXT_MAX_LOGPROBS, "nullable": True},
            "echo": {"type": "boolean", "nullable": True, "description": "Not with logprobs."},
        },
    }


def _embeddings_request() -> dict:
    text = _text()
    return {
        "type": "object", "required": ["model", "input"], "additionalProperties": False,
        "properties": {
            "model": _model(generating=False),
            "input": {"anyOf": [text, {"type": "array", "items": text, "minItems": 1,
                                       "maxItems": settings.INFERENCE_MAX_EMBEDDING_INPUTS}],
                      "description": "Text, or texts (token ids are not accepted)."},
            "encoding_format": {"type": "string", "enum": ["float", "base64"], "nullable": True},
            "user": USER,
        },
    }


def _completion(kind: str) -> dict:
    choice: dict[str, Any] = {"type": "object", "required": ["index", "finish_reason"], "properties": {
        "index": {"type": "integer"},
        "finish_reason": {"type": "string"},
        "logprobs": {"type": "object", "nullable": True}}}
    if kind == "chat":
        choice["required"].append("message")
        choice["properties"]["message"] = {"type": "object", "required": ["role"], "properties": {
            "role": {"type": "string", "enum": ["assistant"]},
            "content": {"type": "string", "nullable": True},
            "tool_calls": {"type": "array", "items": _TOOL_CALL}}}
    else:
        choice["required"].append("text")
        choice["properties"]["text"] = {"type": "string"}
    return {"type": "object", "required": ["id", "object", "created", "model", "choices", "usage"],
            "properties": {"id": {"type": "string"},
                           "object": {"type": "string",
                                      "enum": ["chat.completion" if kind == "chat" else "text_completion"]},
                           "created": {"type": "integer"}, "model": {"type": "string"},
                           "choices": {"type": "array", "items": choice},
                           "usage": {"$ref": REF + "Usage"}}}


_EMBEDDINGS = {"type": "object", "required": ["object", "data", "model", "usage"], "properties": {
    "object": {"type": "string", "enum": ["list"]}, "model": {"type": "string"},
    "data": {"type": "array", "items": {"type": "object", "required": ["object", "index", "embedding"],
                                        "properties": {
                                            "object": {"type": "string", "enum": ["embedding"]},
                                            "index": {"type": "integer"},
                                            "embedding": {"anyOf": [
                                                {"type": "array", "items": {"type": "number"}},
                                                {"type": "string", "format": "byte"}]}}}},
    "usage": {"$ref": REF + "Usage"}}}

# One server-sent event (before OpenAPI 3.2, an event stream's schema describes each event).
_SSE = {"schema": {
    "type": "object", "required": ["data"],
    "description": "With `stream: true`, server-sent events: each `data` is one of OpenAI's chunk "
                   "objects (an error after the first byte is `{\"error\": ...}`); the last is `[DONE]`.",
    "properties": {"data": {"type": "string"}}}}

_HEADERS = [
    {"in": "header", "name": "Idempotency-Key", "required": False,
     "description": "A retry with the same key and body gets the first answer; another body, 422.",
     "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH}},
    {"in": "header", "name": "X-Prompt-Version", "required": False,
     "description": "The saved prompt version this call runs (kept in its usage record).",
     "schema": {"type": "string", "format": "uuid"}},
    {"in": "header", "name": "X-Prompt-Label", "required": False,
     "description": "The label it was fetched by; needs X-Prompt-Version.",
     "schema": {"type": "string", "pattern": PROMPT_LABEL.pattern}},
]


def _examples(request: str, generating: bool) -> dict:
    model = (_model(generating).get("enum") or ["a-model"])[0]
    if request == "EmbeddingsRequest":
        return {"one": {"value": {"model": model, "input": "hello"}},
                "several": {"value": {"model": model, "input": ["hello", "world"],
                                      "encoding_format": "base64"}}}
    ask: dict[str, Any] = {"messages": [{"role": "user", "content": "hello"}]} \
        if request == "ChatCompletionRequest" else {"prompt": "Once upon a time"}
    return {"plain": {"value": {"model": model, **ask, "max_tokens": 16}},
            "streamed": {"value": {"model": model, **ask, "stream": True,
                                   "stream_options": {"include_usage": True}}}}


def _operation(operation_id: str, summary: str, request: str, ok: str, *, stream: bool) -> dict:
    content: dict[str, Any] = {"application/json": {"schema": {"$ref": REF + ok}}}
    if stream:
        content["text/event-stream"] = _SSE
    body = {"$ref": REF + request} if not stream else _streaming(request)
    return {"post": {
        "operationId": operation_id, "summary": summary, "tags": ["v1"],
        "security": [{"ApiKey": []}, {"cookieAuth": []}],
        "parameters": _HEADERS if stream else [],
        "requestBody": {"required": True, "content": {"application/json": {
            "schema": body, "examples": _examples(request, generating=stream)}}},
        "responses": {"200": {"description": "The result (or, streamed, its chunks).", "content": content}},
    }}


def add_generation_operations(result, generator, request, public):
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(SCHEMAS)
    schemas.update({"ChatCompletionRequest": _chat_request(), "CompletionRequest": _text_request(),
                    "EmbeddingsRequest": _embeddings_request(), "ChatCompletion": _completion("chat"),
                    "TextCompletion": _completion("text"), "Embeddings": _EMBEDDINGS})
    result.setdefault("paths", {}).update({
        "/v1/chat/completions": _operation("v1_chat_completions_create", "Generate a chat reply",
                                           "ChatCompletionRequest", "ChatCompletion", stream=True),
        "/v1/completions": _operation("v1_completions_create", "Continue a raw prompt",
                                      "CompletionRequest", "TextCompletion", stream=True),
        "/v1/embeddings": _operation("v1_embeddings_create", "Embed texts", "EmbeddingsRequest",
                                     "Embeddings", stream=False),
    })
    return result
