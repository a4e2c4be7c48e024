"""check_* for /v1/chat/completions bodies: OpenAI-style 400s naming the param."""

from __future__ import annotations

import dataclasses
import json

from django.conf import settings

from core.errors import ApiError

ROLES = {"system", "developer", "user", "assistant", "tool"}
# OpenAI parameters we accept and ignore (their effect is not modelled by our engines).
IGNORED = {"frequency_penalty", "presence_penalty", "logit_bias", "logprobs", "top_logprobs",
           "response_format", "tools", "tool_choice", "parallel_tool_calls", "user", "metadata",
           "store", "service_tier", "modalities", "reasoning_effort", "prediction", "audio",
           "functions", "function_call"}
KNOWN = {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop",
         "seed", "stream", "stream_options", "n", "semantic_cache"} | IGNORED


@dataclasses.dataclass
class ChatParams:
    max_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    stop: list[str] = dataclasses.field(default_factory=list)
    seed: int | None = None
    include_usage: bool = False
    semantic_cache: bool | None = None   # None: the key's preference

    def fingerprint(self) -> dict:
        """What changes a generation's output (for cache keys)."""
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "top_p": self.top_p,
                "stop": self.stop, "seed": self.seed}


@dataclasses.dataclass
class ChatRequest:
    model: str
    messages: list[dict]
    params: ChatParams
    stream: bool


def bad(message: str, param: str | None, code: str = "invalid_value") -> ApiError:
    return ApiError(message, code=code, status_code=400, field=param)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_body_size(length: int) -> None:
    if length > settings.INFERENCE_MAX_BODY_BYTES:
        raise bad(f"The request body is {length} bytes; at most {settings.INFERENCE_MAX_BODY_BYTES} "
                  "bytes are accepted. Shorten the messages.", "messages", "request_too_large")


def parse_json(raw: bytes) -> dict:
    check_body_size(len(raw))
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad(f"We could not parse the JSON body of your request ({exc}).", None,
                  "invalid_json") from None
    if not isinstance(body, dict):
        raise bad("The request body must be a JSON object.", None, "invalid_json")
    return body


def check_messages(messages) -> list[dict]:
    if not isinstance(messages, list):
        raise bad("'messages' must be an array of message objects.", "messages", "invalid_type")
    if not messages:
        raise bad("'messages' must contain at least one message.", "messages")
    cleaned = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise bad(f"'{where}' must be an object.", where, "invalid_type")
        role = message.get("role")
        if role not in ROLES:
            raise bad(f"'{where}.role' must be one of {', '.join(sorted(ROLES))}.", f"{where}.role")
        content = message.get("content")
        if isinstance(content, list):  # content parts: text only
            texts = []
            for j, part in enumerate(content):
                if not isinstance(part, dict) or part.get("type") != "text" \
                        or not isinstance(part.get("text"), str):
                    raise bad(f"'{where}.content[{j}]' must be a text part.", f"{where}.content[{j}]",
                              "invalid_type")
                texts.append(part["text"])
            content = "".join(texts)
        if content is None and role == "assistant":
            content = ""
        if not isinstance(content, str):
            raise bad(f"'{where}.content' must be a string.", f"{where}.content", "invalid_type")
        cleaned.append({"role": role, "content": content})
    if not cleaned[-1]["content"]:
        raise bad("The last message has no content.", f"messages[{len(cleaned) - 1}].content")
    return cleaned


def check_chat_request(body: dict) -> ChatRequest:
    unknown = sorted(set(body) - KNOWN)
    if unknown:
        raise bad(f"Unrecognized request argument supplied: {unknown[0]}", unknown[0],
                  "unknown_parameter")
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
    max_tokens = body.get(name)
    if max_tokens is None:
        max_tokens = settings.INFERENCE_DEFAULT_MAX_TOKENS
    elif not _is_int(max_tokens):
        raise bad(f"Invalid type for '{name}': expected an integer.", name, "invalid_type")
    elif max_tokens < 1:
        raise bad(f"Invalid '{name}': integer below minimum value. Expected a value >= 1, but got "
                  f"{max_tokens} instead.", name, "integer_below_min_value")
    params = ChatParams(max_tokens=max_tokens)
    for field, low, high in (("temperature", 0.0, 2.0), ("top_p", 0.0, 1.0)):
        value = body.get(field)
        if value is None:
            continue
        if not _is_number(value):
            raise bad(f"Invalid type for '{field}': expected a number.", field, "invalid_type")
        if not low <= value <= high or (field == "top_p" and value == 0):
            raise bad(f"Invalid '{field}': {value} is outside the allowed range [{low}, {high}].", field)
        setattr(params, field, float(value))
    stop = body.get("stop")
    if isinstance(stop, str):
        stop = [stop]
    if stop is not None:
        if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop) or len(stop) > 4:
            raise bad("'stop' must be a non-empty string or an array of up to 4 non-empty strings.",
                      "stop", "invalid_type")
        params.stop = stop
    seed = body.get("seed")
    if seed is not None and not _is_int(seed):
        raise bad("Invalid type for 'seed': expected an integer.", "seed", "invalid_type")
    params.seed = seed
    n = body.get("n")
    if n is not None and (not _is_int(n) or n != 1):
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
