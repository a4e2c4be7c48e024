"""check_* for /v1/chat/completions bodies: OpenAI-style 400s naming the param.

This module knows OpenAI's wire format (which parameters exist, their JSON
shapes, content parts); the rules themselves (ranges, limits, what a message
is) are inference_protocol.validation's, shared with the playground and the
engines."""

from __future__ import annotations

import dataclasses
import re

from django.conf import settings

from core.error_codes import DomainError
from core.ids import parse_uuid
from core.jsonbody import JsonTooDeep, json_loads
from inference_protocol import structured, tools
from inference_protocol import validation as protocol

# What /v1/chat/completions implements.
IMPLEMENTED = {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop",
               "seed", "stream", "stream_options", "n", "semantic_cache", "response_format", "logprobs",
               "top_logprobs", "user", "tools", "tool_choice", "parallel_tool_calls"}
# OpenAI parameters we do not implement, each with the values that mean "leave it
# as it is" (what an SDK or a client library sends for an unset option). Any other
# value is refused with a 400 naming the parameter: never accepted and ignored.
NOT_IMPLEMENTED: dict[str, tuple] = {
    "frequency_penalty": (0, 0.0), "presence_penalty": (0, 0.0), "logit_bias": ({},),
    "metadata": ({},), "store": (False,), "service_tier": ("auto", "default"),
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
    n: int = 1
    logprobs: int | None = None          # alternatives per token (0: only the chosen one); None: off
    user: str = ""                       # the caller's end user (kept in usage records)
    raw_prompt: bool = False             # /v1/completions
    tool_constraint: dict | None = None  # the grammar of tool calls (inference_protocol.tools)
    tools: bool = False                  # the reply may hold tool calls: render them as tool_calls
    inputs: list[str] | None = None      # /v1/embeddings
    echo: bool = False                   # /v1/completions: the prompt before the text

    def fingerprint(self) -> dict:
        """What changes a generation's output (for cache keys)."""
        out = {"max_tokens": self.max_tokens, "temperature": self.temperature, "top_p": self.top_p,
               "stop": self.stop, "seed": self.seed}
        for name in ("response_format", "logprobs", "tool_constraint"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.n != 1:
            out["n"] = self.n
        if self.raw_prompt:
            out["raw_prompt"] = True
        return out

    def features(self) -> set[str]:
        """The optional features (inference_protocol.features) this request needs."""
        wanted = {"response_format"} if self.response_format is not None else set()
        if self.logprobs is not None:
            wanted.add("logprobs")
        if self.tool_constraint is not None:
            wanted.add("tools")
        if self.inputs is not None:
            wanted.add("embeddings")
        if self.raw_prompt:
            wanted.add("completions")
        return wanted

    @property
    def cacheable(self) -> bool:
        """Whether a cached text can answer it (one choice, no logprobs)."""
        return self.n == 1 and self.logprobs is None and self.inputs is None


@dataclasses.dataclass
class ChatRequest:
    model: str
    messages: list[dict]
    params: ChatParams
    stream: bool


def bad(message: str, param: str | None, code: str = "invalid_value") -> DomainError:
    return DomainError(message, code=code, field=param)


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


def _tool_turn(message: dict, i: int) -> dict:
    """An assistant turn's tool_calls, or a tool message, as text turns (inference_protocol.tools)."""
    where = f"messages[{i}]"
    if message.get("role") == "tool":
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise bad(f"'{where}.tool_call_id' must be the id of the call this message answers.",
                      f"{where}.tool_call_id", "missing_required_parameter")
        return {"role": "tool", "content": message.get("content")}
    calls = message.get("tool_calls")
    if not isinstance(calls, list) or not calls:
        raise bad(f"'{where}.tool_calls' must be a non-empty array.", f"{where}.tool_calls", "invalid_type")
    for j, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) \
                or not isinstance(fn.get("arguments"), str):
            raise bad(f"'{where}.tool_calls[{j}]' must be {{\"type\": \"function\", \"id\": ..., "
                      "\"function\": {\"name\": ..., \"arguments\": \"<JSON text>\"}}.",
                      f"{where}.tool_calls[{j}]", "invalid_type")
    content = message.get("content") or ""
    if not isinstance(content, str):
        raise bad(f"'{where}.content' must be a string or null.", f"{where}.content", "invalid_type")
    return {"role": "assistant", "content": content + tools.call_text(calls)}


def _openai_messages(messages):
    """OpenAI's message forms that mean plain text (content parts of type text,
    an assistant turn with null content, tool calls and tool results) as the
    protocol's {"role", "content"}."""
    if not isinstance(messages, list):
        return messages
    out = []
    for i, message in enumerate(messages):
        if isinstance(message, dict):
            if message.get("role") == "tool" or message.get("tool_calls") is not None:
                message = _tool_turn(message, i)
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


def _int_in(value, name: str, low: int, high: int) -> int:
    if type(value) is not int:
        raise bad(f"Invalid type for '{name}': expected an integer.", name, "invalid_type")
    if value < low:
        raise bad(f"Invalid '{name}': integer below minimum value. Expected a value >= {low}, but got "
                  f"{value} instead.", name, "integer_below_min_value")
    if value > high:
        raise bad(f"Invalid '{name}': integer above maximum value. Expected a value <= {high}, but got "
                  f"{value} instead.", name, "integer_above_max_value")
    return value


def check_common(body: dict, params: ChatParams) -> None:
    """``n`` and ``user``, the same on both endpoints."""
    if body.get("n") is not None:
        params.n = _int_in(body["n"], "n", 1, settings.INFERENCE_MAX_N)
    user = body.get("user")
    if user is not None:
        if not isinstance(user, str) or len(user) > 256:
            raise bad("'user' must be a string of at most 256 characters.", "user", "invalid_type")
        try:
            params.user = protocol.check_text(user, field="user")
        except protocol.InvalidInput as exc:
            raise bad(str(exc), exc.field, exc.kind) from None
        if "\x00" in user:  # kept in the usage records: no database text column holds NUL
            raise bad("'user' cannot contain a NUL character.", "user", "invalid_value")


def _check_model(body: dict) -> str:
    model = body.get("model")
    if model is None:
        raise bad("You must provide a model parameter.", "model", "missing_required_parameter")
    if not isinstance(model, str) or not model:
        raise bad("'model' must be a non-empty string.", "model", "invalid_type")
    return model


def _check_stream(body: dict) -> bool:
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise bad(f"Invalid type for 'stream': expected a boolean, but got {type(stream).__name__}.",
                  "stream", "invalid_type")
    return stream


def _check_params(body: dict, stream: bool, *, default_max_tokens: int) -> ChatParams:
    """The sampling parameters and options both endpoints share."""
    name = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    stop = body.get("stop")
    try:
        max_tokens = body.get(name)
        max_tokens = default_max_tokens if max_tokens is None \
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
    except protocol.InvalidInput as exc:
        raise bad(str(exc), exc.field, exc.kind) from None
    check_common(body, params)
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
    return params


def _check_known(body: dict, known: set[str], table: dict[str, tuple]) -> None:
    unknown = sorted(set(body) - known)
    if unknown:
        raise bad(f"Unrecognized request argument supplied: {unknown[0]}", unknown[0],
                  "unknown_parameter")
    check_not_implemented(body, table)


def check_chat_request(body: dict) -> ChatRequest:
    _check_known(body, KNOWN, NOT_IMPLEMENTED)
    model = _check_model(body)
    if "messages" not in body:
        raise bad("Missing required parameter: 'messages'.", "messages", "missing_required_parameter")
    messages = check_messages(body["messages"])
    stream = _check_stream(body)
    params = _check_params(body, stream, default_max_tokens=settings.INFERENCE_DEFAULT_MAX_TOKENS)
    if body.get("response_format") is not None:
        try:
            params.response_format = structured.check_response_format(body["response_format"])
        except protocol.InvalidInput as exc:
            raise bad(str(exc), exc.field, exc.kind) from None
    if body.get("logprobs") is not None:
        if not isinstance(body["logprobs"], bool):
            raise bad("Invalid type for 'logprobs': expected a boolean.", "logprobs", "invalid_type")
        top = body.get("top_logprobs")
        if top is not None and not body["logprobs"]:
            raise bad("'top_logprobs' needs 'logprobs': true.", "top_logprobs")
        if body["logprobs"]:
            params.logprobs = _int_in(top or 0, "top_logprobs", 0, settings.INFERENCE_MAX_TOP_LOGPROBS)
    elif body.get("top_logprobs") is not None:
        raise bad("'top_logprobs' needs 'logprobs': true.", "top_logprobs")
    messages = _check_tools(body, params, messages)
    return ChatRequest(model=model, messages=messages, params=params, stream=stream)


def _check_tools(body: dict, params: ChatParams, messages: list[dict]) -> list[dict]:
    """tools / tool_choice / parallel_tool_calls: the tools prompt joins the
    system message, and the reply's grammar is the calls' (inference_protocol.tools)."""
    parallel = body.get("parallel_tool_calls")
    if parallel is not None and not isinstance(parallel, bool):
        raise bad("Invalid type for 'parallel_tool_calls': expected a boolean.", "parallel_tool_calls",
                  "invalid_type")
    try:
        defined = tools.check_tools(body["tools"]) if body.get("tools") is not None else []
        choice = tools.check_tool_choice(body.get("tool_choice"), defined)
    except protocol.InvalidInput as exc:
        raise bad(str(exc), exc.field, exc.kind) from None
    if choice == "none" or not defined:
        return messages
    if params.response_format is not None:
        raise bad("'response_format' cannot be combined with tools the model may call; use "
                  "tool_choice 'none', or drop response_format.", "response_format", "unsupported_parameter")
    params.tool_constraint = tools.tool_constraint(defined, choice, parallel=parallel is not False)
    params.tools = True
    prompt = tools.tools_prompt(defined, choice)
    if messages[0]["role"] in ("system", "developer"):
        return [{**messages[0], "content": f"{messages[0]['content']}\n\n{prompt}"}, *messages[1:]]
    return [{"role": "system", "content": prompt}, *messages]


# /v1/completions (the legacy prompt form).
TEXT_IMPLEMENTED = {"model", "prompt", "max_tokens", "temperature", "top_p", "stop", "seed", "stream",
                    "stream_options", "n", "logprobs", "echo", "user", "semantic_cache"}
TEXT_NOT_IMPLEMENTED: dict[str, tuple] = {
    "suffix": ("",), "best_of": (1,), "frequency_penalty": (0, 0.0), "presence_penalty": (0, 0.0),
    "logit_bias": ({},)}
# OpenAI's legacy default.
TEXT_DEFAULT_MAX_TOKENS = 16
TEXT_MAX_LOGPROBS = 5


def check_text_request(body: dict) -> ChatRequest:
    """A /v1/completions body as a request whose one message is the raw prompt."""
    _check_known(body, TEXT_IMPLEMENTED | set(TEXT_NOT_IMPLEMENTED), TEXT_NOT_IMPLEMENTED)
    model = _check_model(body)
    if "prompt" not in body:
        raise bad("Missing required parameter: 'prompt'.", "prompt", "missing_required_parameter")
    prompt = body["prompt"]
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if isinstance(prompt, list):
        raise bad("'prompt' must be one string (a list of prompts or of token ids is not supported; "
                  "send one request per prompt).", "prompt", "unsupported_parameter")
    if not isinstance(prompt, str) or not prompt:
        raise bad("'prompt' must be a non-empty string.", "prompt", "invalid_type")
    try:
        protocol.check_text(prompt, field="prompt")
    except protocol.InvalidInput as exc:
        raise bad(str(exc), exc.field, exc.kind) from None
    stream = _check_stream(body)
    params = _check_params(body, stream, default_max_tokens=TEXT_DEFAULT_MAX_TOKENS)
    params.raw_prompt = True
    if body.get("logprobs") is not None:
        params.logprobs = _int_in(body["logprobs"], "logprobs", 0, TEXT_MAX_LOGPROBS)
    echo = body.get("echo")
    if echo is not None and not isinstance(echo, bool):
        raise bad("Invalid type for 'echo': expected a boolean.", "echo", "invalid_type")
    if echo and params.logprobs is not None:
        raise bad("'echo' with 'logprobs' would need the prompt's log probabilities, which this "
                  "server does not compute.", "echo", "unsupported_parameter")
    params.echo = bool(echo)
    return ChatRequest(model=model, messages=[{"role": "user", "content": prompt}], params=params,
                       stream=stream)


PROMPT_LABEL = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")


def check_prompt_ref(headers) -> dict | None:
    """X-Prompt-Version (a version id) and X-Prompt-Label: which saved prompt
    version a /v1 call ran, recorded in its usage record (the SDK sends them; a
    caller's own records only, so a claim is trusted, but must be well formed)."""
    version, label = headers.get("X-Prompt-Version"), headers.get("X-Prompt-Label")
    if version is None and label is None:
        return None
    if version is None:
        raise DomainError("X-Prompt-Label needs X-Prompt-Version.", code="invalid_prompt_ref",
                          field="X-Prompt-Version")
    parsed = parse_uuid(version)
    if parsed is None:
        raise DomainError("X-Prompt-Version must be a version id (a UUID).", code="invalid_prompt_ref",
                          field="X-Prompt-Version")
    if label is not None and not PROMPT_LABEL.fullmatch(label):
        raise DomainError("X-Prompt-Label is not a label name.", code="invalid_prompt_ref",
                          field="X-Prompt-Label")
    return {"version": str(parsed), "label": label or ""}



# /v1/embeddings.
EMBED_IMPLEMENTED = {"model", "input", "encoding_format", "user"}
EMBED_NOT_IMPLEMENTED: dict[str, tuple] = {"dimensions": ()}


@dataclasses.dataclass
class EmbedRequest:
    model: str
    params: ChatParams
    messages: list[dict]
    encoding_format: str


def check_embeddings_request(body: dict) -> EmbedRequest:
    _check_known(body, EMBED_IMPLEMENTED | set(EMBED_NOT_IMPLEMENTED), EMBED_NOT_IMPLEMENTED)
    model = _check_model(body)
    if "input" not in body:
        raise bad("Missing required parameter: 'input'.", "input", "missing_required_parameter")
    inputs = body["input"]
    if isinstance(inputs, str):
        inputs = [inputs]
    most = settings.INFERENCE_MAX_EMBEDDING_INPUTS
    if not isinstance(inputs, list) or not inputs:
        raise bad("'input' must be a string or a non-empty array of strings.", "input", "invalid_type")
    if len(inputs) > most:
        raise bad(f"'input' holds at most {most} strings.", "input", "invalid_value")
    for i, text in enumerate(inputs):
        if not isinstance(text, str):
            raise bad("'input' must be text (arrays of token ids are not supported).", f"input[{i}]",
                      "unsupported_parameter" if isinstance(text, int | list) else "invalid_type")
        if not text:
            raise bad(f"'input[{i}]' is empty.", f"input[{i}]", "invalid_value")
        try:
            protocol.check_text(text, field=f"input[{i}]")
        except protocol.InvalidInput as exc:
            raise bad(str(exc), exc.field, exc.kind) from None
    encoding = body.get("encoding_format") or "float"
    if encoding not in ("float", "base64"):
        raise bad("'encoding_format' must be 'float' or 'base64'.", "encoding_format")
    params = ChatParams(max_tokens=1, n=len(inputs), inputs=list(inputs))
    check_common({"user": body.get("user")}, params)
    return EmbedRequest(model=model, params=params, encoding_format=encoding,
                        messages=[{"role": "user", "content": text} for text in inputs])
