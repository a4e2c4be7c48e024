"""`check_*`: validate version input before anything is written. Each error
is a 400 that names the field. The sampling rules are
inference_protocol.validation's, the same as /v1's and the engines'."""

from __future__ import annotations

from django.conf import settings

from core import patterns
from core.error_codes import DomainError
from inference_protocol import structured
from inference_protocol import tools as protocol_tools
from inference_protocol import validation as protocol
from inference_protocol.catalog import model_names

from .templating import NAME


def _bad(field: str, message: str, code: str = "invalid_request") -> DomainError:
    return DomainError(message, code=code, field=field)


def check_utf8(text: str, *, field: str, max_bytes: int) -> bytes:
    try:
        data = protocol.encode_text(text, field=field)
    except protocol.InvalidInput as exc:
        raise _bad(field, f"{field} is not valid UTF-8 text.", "body_not_utf8") from exc
    if len(data) > max_bytes:
        raise _bad(field, f"{field} is {len(data)} bytes; the maximum is {max_bytes}.", "body_too_large")
    return data


def check_params(*, model_name, temperature, max_tokens, top_p, stop, variables, response_schema,
                 tools=(), seed=None, tool_choice=None) -> None:
    if model_name not in model_names():
        known = ", ".join(sorted(model_names()))
        raise _bad("model", f"Unknown model {model_name!r}; known models: {known}.", "model_not_found")
    try:
        protocol.check_sampling(temperature=temperature, max_tokens=max_tokens, top_p=top_p, seed=seed)
        protocol.check_stop(stop)
    except protocol.InvalidInput as exc:
        # This API's codes: a value of the right type outside its range is out_of_range.
        code = "invalid_request" if exc.kind in ("invalid_type", "invalid_unicode") else "out_of_range"
        raise _bad(exc.field.partition("[")[0], str(exc), code) from None
    if not isinstance(variables, dict):
        raise _bad("variables", "variables must be an object of name -> default (string or null).")
    for name, default in variables.items():
        if not NAME.fullmatch(name):
            raise _bad("variables", f"Invalid variable name {name!r}.", "invalid_variable_name")
        if default is not None and not isinstance(default, str):
            raise _bad("variables", f"The default of {name!r} must be a string or null.")
        if default is not None:
            try:
                protocol.check_text(default, field=f"variables.{name}")
            except protocol.InvalidInput as exc:
                raise _bad(exc.field, str(exc), "invalid_unicode") from None
            check_utf8(default, field=f"variables.{name}", max_bytes=settings.PROMPT_SYSTEM_MAX_BYTES)
    if response_schema is not None and not isinstance(response_schema, dict):
        raise _bad("response_schema", "response_schema must be a JSON object.")
    if response_schema is not None:  # a run enforces it: it must compile to a grammar
        try:
            structured.check_schema(response_schema, field="response_schema")
        except protocol.InvalidInput as exc:
            raise _bad("response_schema", str(exc), exc.kind) from None
        # A judge's reply is validated against it by the server: its patterns must run on RE2.
        patterns.check_schema(response_schema, field="response_schema", invalid_code="invalid_request")
    check_tools(tools, response_schema=response_schema, tool_choice=tool_choice)


def check_tools(tools, *, response_schema=None, tool_choice=None) -> None:
    """Function tools in OpenAI's shape, by the checker /v1 applies to `tools`
    (inference_protocol.tools), so a saved version's tools run as they were saved."""
    try:
        defined = protocol_tools.check_tools(tools, field="tools")
    except protocol.InvalidInput as exc:
        raise _bad(exc.field, str(exc), exc.kind) from None
    if defined and response_schema is not None:  # /v1 refuses the two together on every run
        raise _bad("tools", "A version holds tools or a response schema, not both: a run constrains the "
                   "reply to one of them.", "unsupported_parameter")
    if tool_choice is not None:  # None: auto with tools, as /v1 reads a missing tool_choice
        if not defined:
            raise _bad("tool_choice", "tool_choice needs tools.", "invalid_value")
        try:
            protocol_tools.check_tool_choice(tool_choice, defined)
        except protocol.InvalidInput as exc:
            raise _bad(exc.field, str(exc), exc.kind) from None


# The roles a saved turn may have, and the fields each may hold besides role and content.
MESSAGE_FIELDS = {"system": set(), "user": set(), "assistant": {"tool_calls"}, "tool": {"tool_call_id"}}


def check_messages(messages) -> list[dict]:
    """A version's turns between its system text and its body: each a
    {"role", "content"} template; an assistant turn may instead (or also) hold
    tool_calls, a tool turn names the call it answers (tool_call_id)."""
    if not isinstance(messages, list):
        raise _bad("messages", "messages must be an array of {role, content} objects.", "invalid_type")
    limit = settings.PROMPT_MAX_MESSAGES
    if len(messages) > limit:
        raise _bad("messages", f"A version holds at most {limit} messages besides its system text and "
                   f"body; this one has {len(messages)}.", "too_many_messages")
    out = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise _bad(where, f"{where} must be an object with a role and content.", "invalid_type")
        role = message.get("role")
        if not isinstance(role, str) or role not in MESSAGE_FIELDS:
            raise _bad(f"{where}.role", f"{where}.role must be one of {', '.join(MESSAGE_FIELDS)}.",
                       "invalid_value")
        extra = sorted(set(message) - {"role", "content"} - MESSAGE_FIELDS[role])
        if extra:
            raise _bad(f"{where}.{extra[0]}", f"A {role} message has no field '{extra[0]}'.",
                       "unknown_parameter")
        content = message.get("content")
        calls = message.get("tool_calls")
        if calls is not None:
            try:
                protocol_tools.check_calls(calls, field=f"{where}.tool_calls")
            except protocol.InvalidInput as exc:
                raise _bad(exc.field, str(exc), exc.kind) from None
        if content is None and calls is None or content is not None and not isinstance(content, str):
            raise _bad(f"{where}.content", f"{where}.content must be text.", "invalid_type")
        check_utf8(content or "", field=f"{where}.content", max_bytes=settings.PROMPT_SYSTEM_MAX_BYTES)
        if role == "tool" and not (isinstance(message.get("tool_call_id"), str) and message["tool_call_id"]):
            raise _bad(f"{where}.tool_call_id", "A tool message names the call it answers (tool_call_id).",
                       "missing_required_parameter")
        out.append({**message, "content": content or ""})  # one form of "no text": ""
    return out
