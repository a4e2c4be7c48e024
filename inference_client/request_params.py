"""The request envelope every /v1 endpoint shares: the body's size and JSON,
ChatParams/ChatRequest, the parameter checks common to the endpoints (model,
stream, sampling, n, user, unknown and unimplemented parameters) and the
X-Prompt-* headers. OpenAI-style 400s naming the param; the rules themselves are
inference_protocol.validation's."""

from __future__ import annotations

import dataclasses
import re

from django.conf import settings

from core.error_codes import DomainError
from core.ids import parse_uuid
from core.jsonbody import JsonTooDeep, json_loads
from inference_protocol import validation as protocol


@dataclasses.dataclass
class ChatParams:
    max_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    stop: list[str] = dataclasses.field(default_factory=list)
    seed: int | None = None
    include_usage: bool = False
    semantic_cache: bool = False         # the semantic prompt cache too (asked per request)
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


def _same(a, b) -> bool:
    return type(a) is type(b) and a == b or (type(a) in (int, float) and type(b) in (int, float) and a == b)


def check_not_implemented(body: dict, table: dict[str, tuple]) -> None:
    """A parameter we do not implement is refused unless null or its neutral value."""
    for name in sorted(set(body) & set(table)):
        value = body[name]
        if value is None or any(_same(value, neutral) for neutral in table[name]):
            continue
        raise bad(f"'{name}' is not supported by this server; remove it from the request.", name,
                  "unsupported_parameter")


def int_in(value, name: str, low: int, high: int) -> int:
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
        params.n = int_in(body["n"], "n", 1, settings.INFERENCE_MAX_N)
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


def check_model(body: dict) -> str:
    model = body.get("model")
    if model is None:
        raise bad("You must provide a model parameter.", "model", "missing_required_parameter")
    if not isinstance(model, str) or not model:
        raise bad("'model' must be a non-empty string.", "model", "invalid_type")
    return model


def check_stream(body: dict) -> bool:
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise bad(f"Invalid type for 'stream': expected a boolean, but got {type(stream).__name__}.",
                  "stream", "invalid_type")
    return stream


def check_params(body: dict, stream: bool, *, default_max_tokens: int) -> ChatParams:
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
    params.semantic_cache = bool(semantic)
    return params


def check_known(body: dict, known: set[str], table: dict[str, tuple]) -> None:
    unknown = sorted(set(body) - known)
    if unknown:
        raise bad(f"Unrecognized request argument supplied: {unknown[0]}", unknown[0],
                  "unknown_parameter")
    check_not_implemented(body, table)



def check_body(body: dict, implemented: set[str], refused: dict[str, tuple], required: str):
    """How every /v1 body check starts: no unknown parameter, none of `refused` set
    to other than its default, a model, and the endpoint's one required parameter:
    (model, that parameter's value)."""
    check_known(body, implemented | set(refused), refused)
    model = check_model(body)
    if required not in body:
        raise bad(f"Missing required parameter: '{required}'.", required, "missing_required_parameter")
    return model, body[required]

PROMPT_LABEL = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")


def check_prompt_ref(meta) -> dict | None:
    """X-Prompt-Version (a version id) and X-Prompt-Label: which saved prompt
    version a /v1 call ran, recorded in its usage record (the SDK sends them; a
    caller's own records only, so a claim is trusted, but must be well formed)."""
    version, label = meta.get("HTTP_X_PROMPT_VERSION"), meta.get("HTTP_X_PROMPT_LABEL")
    variables = meta.get("HTTP_X_PROMPT_VARIABLES")
    if version is None and label is None and variables is None:
        return None
    if version is None:
        raise DomainError("X-Prompt-Label and X-Prompt-Variables need X-Prompt-Version.",
                          code="invalid_prompt_ref", field="X-Prompt-Version")
    parsed = parse_uuid(version)
    if parsed is None:
        raise DomainError("X-Prompt-Version must be a version id (a UUID).", code="invalid_prompt_ref",
                          field="X-Prompt-Version")
    if label is not None and not PROMPT_LABEL.fullmatch(label):
        raise DomainError("X-Prompt-Label is not a label name.", code="invalid_prompt_ref",
                          field="X-Prompt-Label")
    return {"version": str(parsed), "label": label or "", "variables": _prompt_variables(variables)}


PROMPT_VARIABLES_MAX_BYTES = 8192


def _prompt_variables(raw: str | None) -> dict:
    """X-Prompt-Variables: the JSON object of the variables the version was rendered
    with (kept in the generations log), at most PROMPT_VARIABLES_MAX_BYTES."""
    if raw is None:
        return {}
    try:
        value = json_loads(raw) if len(raw) <= PROMPT_VARIABLES_MAX_BYTES else None
    except (ValueError, JsonTooDeep):
        value = None
    if not isinstance(value, dict):
        raise DomainError(f"X-Prompt-Variables must be a JSON object of at most {PROMPT_VARIABLES_MAX_BYTES} "
                          "bytes.", code="invalid_prompt_ref", field="X-Prompt-Variables")
    return value
