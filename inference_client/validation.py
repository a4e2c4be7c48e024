"""check_* for /v1/chat/completions bodies: OpenAI-style 400s naming the param.

This module knows OpenAI's wire format (which parameters exist, their JSON
shapes, content parts); the rules themselves (ranges, limits, what a message
is) are inference_protocol.validation's, shared with the playground and the
engines."""

from __future__ import annotations

import dataclasses

from django.conf import settings

from core.errors import ApiError
from core.jsonbody import JsonTooDeep, json_loads
from inference_protocol import structured
from inference_protocol import validation as protocol

# What /v1/chat/completions implements.
IMPLEMENTED = {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop",
               "seed", "stream", "stream_options", "n", "semantic_cache", "response_format"}
# OpenAI parameters we do not implement, each with the values that mean "leave it
# as it is" (what an SDK or a client library sends for an unset option). Any other
# value is refused with a 400 naming the parameter: never accepted and ignored.
NOT_IMPLEMENTED: dict[str, tuple] = {
    "frequency_penalty": (0, 0.0), "presence_penalty": (0, 0.0), "logit_bias": ({},),
    "logprobs": (False,), "top_logprobs": (0,),
    "tools": ([],), "tool_choice": ("none",), "parallel_tool_calls": (),
    "user": (), "metadata": ({},), "store": (False,), "service_tier": ("auto", "default"),
    "modalities": (["text"],), "reasoning_effort": (), "prediction": (), "audio": (),
    "functions": ([],), "function_call": ("none",), "web_search_options": (),
}
KNOWN = IMPLEMENTED | set(NOT_IMPLEMENTED)


@dataclasses.dataclass
class ChatParams:
    max_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    stop: list[str] = dataclasses.field(default_factory=list)
    seed: int | None = None
    include_usage: bool = False
    semantic_cache: bool | None = None   # None: the key's preference
    response_format: dict | None = None  # a constraint (inference_protocol.structured), None: text

    def fingerprint(self) -> dict:
        """What changes a generation's output (for cache keys)."""
        out = {"max_tokens": self.max_tokens, "temperature": self.temperature, "top_p": self.top_p,
               "stop": self.stop, "seed": self.seed}
        if self.response_format is not None:
            out["response_format"] = self.response_format
        return out

    def features(self) -> set[str]:
        """The optional features (inference_protocol.features) this request needs."""
        return {"response_format"} if self.response_format is not None else set()


@dataclasses.dataclass
class ChatRequest:
    model: str
    messages: list[dict]
    params: ChatParams
    stream: bool


def bad(message: str, param: str | None, code: str = "invalid_value") -> ApiError:
    return ApiError(message, code=code, status_code=400, field=param)


def check_body_size(length: int) -> None:
    if length > settings.INFERENCE_MAX_BODY_BYTES:
        raise bad(f"The request body is {length} bytes; at most {settings.INFERENCE_MAX_BODY_BYTES} "
                  "bytes are accepted. Shorten the messages.", "messages", "request_too_large")


def parse_json(raw: bytes) -> dict:
    check_body_size(len(raw))
    try:
        body = json_loads(raw)
    except JsonTooDeep as exc:
        raise bad(str(exc), None, "json_too_deep") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad(f"We could not parse the JSON body of your request ({exc}).", None,
                  "invalid_json") from None
    if not isinstance(body, dict):
        raise bad("The request body must be a JSON object.", None, "invalid_json")
    return body


def _openai_messages(messages):
    """OpenAI's message forms that mean plain text (content parts of type text,
    an assistant turn with null content) as the protocol's {"role", "content"}."""
    if not isinstance(messages, list):
        return messages
    out = []
    for i, message in enumerate(messages):
        if isinstance(message, dict):
            content = message.get("content")
            if isinstance(content, list):  # content parts: text only
                for j, part in enumerate(content):
                    if not isinstance(part, dict) or part.get("type") != "text" \
                            or not isinstance(part.get("text"), str):
                        raise bad(f"'messages[{i}].content[{j}]' must be a text part.",
                                  f"messages[{i}].content[{j}]", "invalid_type")
                message = {**message, "content": "".join(part["text"] for part in content)}
            elif content is None and message.get("role") == "assistant":
                message = {**message, "content": ""}
        out.append(message)
    return out


def check_messages(messages) -> list[dict]:
    try:
        return protocol.check_messages(_openai_messages(messages))
    except protocol.InvalidInput as exc:
        raise bad(str(exc), exc.field, exc.kind) from None


def _same(a, b) -> bool:
    return type(a) is type(b) and a == b or (type(a) in (int, float) and type(b) in (int, float) and a == b)


def check_not_implemented(body: dict, table: dict[str, tuple] = NOT_IMPLEMENTED) -> None:
    """A parameter we do not implement is refused unless null or its neutral value."""
    for name in sorted(set(body) & set(table)):
        value = body[name]
        if value is None or any(_same(value, neutral) for neutral in table[name]):
            continue
        raise bad(f"'{name}' is not supported by this server; remove it from the request.", name,
                  "unsupported_parameter")


def check_chat_request(body: dict) -> ChatRequest:
    unknown = sorted(set(body) - KNOWN)
    if unknown:
        raise bad(f"Unrecognized request argument supplied: {unknown[0]}", unknown[0],
                  "unknown_parameter")
    check_not_implemented(body)
    model = body.get("model")
    if model is None:
        raise bad("You must provide a model parameter.", "model", "missing_required_parameter")
    if not isinstance(model, str) or not model:
        raise bad("'model' must be a non-empty string.", "model", "invalid_type")
    if "messages" not in body:
        raise bad("Missing required parameter: 'messages'.", "messages", "missing_required_parameter")
    messages = check_messages(body["messages"])

    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise bad(f"Invalid type for 'stream': expected a boolean, but got {type(stream).__name__}.",
                  "stream", "invalid_type")
    name = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    stop = body.get("stop")
    try:
        max_tokens = body.get(name)
        max_tokens = settings.INFERENCE_DEFAULT_MAX_TOKENS if max_tokens is None \
            else protocol.check_max_tokens(max_tokens, field=name)
        params = ChatParams(max_tokens=max_tokens)
        if body.get("temperature") is not None:
            params.temperature = protocol.check_temperature(body["temperature"])
        if body.get("top_p") is not None:
            params.top_p = protocol.check_top_p(body["top_p"])
        if stop is not None:
            params.stop = protocol.check_stop([stop] if isinstance(stop, str) else stop)
        if body.get("seed") is not None:
            params.seed = protocol.check_seed(body["seed"])
        if body.get("response_format") is not None:
            params.response_format = structured.check_response_format(body["response_format"])
    except protocol.InvalidInput as exc:
        raise bad(str(exc), exc.field, exc.kind) from None
    n = body.get("n")
    if n is not None and (type(n) is not int or n != 1):
        raise bad("Only n=1 is supported.", "n")
    options = body.get("stream_options")
    if options is not None:
        if not isinstance(options, dict) or not isinstance(options.get("include_usage", False), bool):
            raise bad("'stream_options' must be an object like {\"include_usage\": true}.",
                      "stream_options", "invalid_type")
        if not stream:
            raise bad("'stream_options' is only allowed when 'stream' is true.", "stream_options")
        params.include_usage = options.get("include_usage", False)
    semantic = body.get("semantic_cache")
    if semantic is not None and not isinstance(semantic, bool):
        raise bad("Invalid type for 'semantic_cache': expected a boolean.", "semantic_cache",
                  "invalid_type")
    params.semantic_cache = semantic
    return ChatRequest(model=model, messages=messages, params=params, stream=stream)
