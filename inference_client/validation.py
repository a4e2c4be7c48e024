"""check_* for /v1/chat/completions, /v1/completions and /v1/embeddings bodies:
OpenAI-style 400s naming the param.

This module knows OpenAI's wire format (which parameters exist, their JSON
shapes, content parts); the checks every endpoint shares are request_params',
the rules themselves (ranges, limits, what a message is) are
inference_protocol.validation's, shared with the playground and the engines."""

from __future__ import annotations

import dataclasses

from django.conf import settings

from inference_client.request_params import (
    ChatParams,
    ChatRequest,
    bad,
    check_body,
    check_common,
    check_params,
    check_stream,
    int_in,
)
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


def _tool_turn(message: dict, i: int) -> dict:
    """An assistant turn's tool_calls, or a tool message, as text turns (inference_protocol.tools)."""
    where = f"messages[{i}]"
    if message.get("role") == "tool":
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise bad(f"'{where}.tool_call_id' must be the id of the call this message answers.",
                      f"{where}.tool_call_id", "missing_required_parameter")
        return {"role": "tool", "content": message.get("content")}
    try:
        calls = tools.check_calls(message.get("tool_calls"), field=f"{where}.tool_calls")
    except protocol.InvalidInput as exc:
        raise bad(str(exc), exc.field, exc.kind) from None
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


def check_chat_request(body: dict) -> ChatRequest:
    model, messages = check_body(body, IMPLEMENTED, NOT_IMPLEMENTED, "messages")
    messages = check_messages(messages)
    stream = check_stream(body)
    params = check_params(body, stream, default_max_tokens=settings.INFERENCE_DEFAULT_MAX_TOKENS)
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
            params.logprobs = int_in(top or 0, "top_logprobs", 0, settings.INFERENCE_MAX_TOP_LOGPROBS)
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
    model, prompt = check_body(body, TEXT_IMPLEMENTED, TEXT_NOT_IMPLEMENTED, "prompt")
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
    stream = check_stream(body)
    params = check_params(body, stream, default_max_tokens=TEXT_DEFAULT_MAX_TOKENS)
    params.raw_prompt = True
    if body.get("logprobs") is not None:
        params.logprobs = int_in(body["logprobs"], "logprobs", 0, TEXT_MAX_LOGPROBS)
    echo = body.get("echo")
    if echo is not None and not isinstance(echo, bool):
        raise bad("Invalid type for 'echo': expected a boolean.", "echo", "invalid_type")
    if echo and params.logprobs is not None:
        raise bad("'echo' with 'logprobs' would need the prompt's log probabilities, which this "
                  "server does not compute.", "echo", "unsupported_parameter")
    params.echo = bool(echo)
    return ChatRequest(model=model, messages=[{"role": "user", "content": prompt}], params=params,
                       stream=stream)


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
    model, inputs = check_body(body, EMBED_IMPLEMENTED, EMBED_NOT_IMPLEMENTED, "input")
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
