"""Tools (function calling) in OpenAI's shape, for models whose chat template knows none.

The gateway checks ``tools`` / ``tool_choice`` here, turns the definitions into a
system message the model reads (``tools_prompt``), and builds the grammar that
constrains its reply (``tool_constraint``):

- ``auto``: prose (not starting with ``<``), or one or more calls;
- ``required`` / a named function: calls only (the named one only);
- ``none``: no tools in the prompt, no grammar.

A call is written ``<tool_call>{"name": ..., "arguments": {...}}``; its JSON is
constrained by the function's ``parameters`` schema, so the arguments of every
call validate. ``parse_calls`` reads the calls back out of the text (the gateway
renders them as ``tool_calls``). Earlier turns go back to the model in the
same form: an assistant message's ``tool_calls`` as that text, a ``tool``
message as a ``tool`` turn naming the call it answers.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from inference_protocol import structured
from inference_protocol.validation import InvalidInput

CALL_MARK = "<tool_call>"
NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_TOOLS = 64


def _bad(message: str, field: str, kind: str = "invalid_value") -> InvalidInput:
    return InvalidInput(message, field=field, kind=kind)


def check_tools(tools: object, *, field: str = "tools") -> list[dict[str, Any]]:
    """OpenAI's function tools as [{"name", "description", "parameters"}]."""
    if not isinstance(tools, list):
        raise _bad(f"'{field}' must be an array of tools.", field, "invalid_type")
    if len(tools) > MAX_TOOLS:
        raise _bad(f"'{field}' holds at most {MAX_TOOLS} tools.", field)
    out, names = [], set()
    for i, tool in enumerate(tools):
        where = f"{field}[{i}]"
        if not isinstance(tool, dict) or tool.get("type") != "function" \
                or not isinstance(tool.get("function"), dict):
            raise _bad(f"'{where}' must be {{\"type\": \"function\", \"function\": {{...}}}}.", where,
                       "invalid_type")
        fn = tool["function"]
        extra = sorted(set(fn) - {"name", "description", "parameters", "strict"})
        if extra:
            raise _bad(f"Unrecognized field '{where}.function.{extra[0]}'.", f"{where}.function.{extra[0]}")
        name = fn.get("name")
        if not isinstance(name, str) or not NAME_RE.fullmatch(name):
            raise _bad(f"'{where}.function.name' must be 1-64 letters, digits, '_' or '-'.",
                       f"{where}.function.name", "invalid_type")
        if name in names:
            raise _bad(f"Two tools are named '{name}'.", f"{where}.function.name")
        names.add(name)
        description = fn.get("description", "")
        if not isinstance(description, str):
            raise _bad(f"'{where}.function.description' must be a string.", f"{where}.function.description",
                       "invalid_type")
        params = fn.get("parameters", {"type": "object", "properties": {}})
        pfield = f"{where}.function.parameters"
        if not isinstance(params, dict) or params.get("type", "object") != "object":
            raise _bad(f"'{pfield}' must be a JSON schema of type object.", pfield, "invalid_type")
        structured.check_schema(params, field=pfield)
        out.append({"name": name, "description": description, "parameters": params})
    return out


def check_calls(calls: object, *, field: str) -> list[dict[str, Any]]:
    """An assistant turn's tool_calls in OpenAI's shape:
    [{"type": "function", "id", "function": {"name", "arguments": "<JSON text>"}}]."""
    if not isinstance(calls, list) or not calls:
        raise _bad(f"'{field}' must be a non-empty array.", field, "invalid_type")
    for j, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) \
                or not isinstance(fn.get("arguments"), str):
            raise _bad(f"'{field}[{j}]' must be {{\"type\": \"function\", \"id\": ..., "
                       "\"function\": {\"name\": ..., \"arguments\": \"<JSON text>\"}}.",
                       f"{field}[{j}]", "invalid_type")
    return calls


def check_tool_choice(value: Any, tools: list[dict[str, Any]], *, field: str = "tool_choice") -> str:
    """'none', 'auto', 'required', or the name of the one function to call."""
    if value is None:
        return "auto" if tools else "none"
    if isinstance(value, str) and value in ("none", "auto", "required"):
        if value != "none" and not tools:
            raise _bad(f"'{field}' is '{value}' but no tools were given.", field)
        return value
    named = isinstance(value, dict) and value.get("type") == "function"
    if named and isinstance(value.get("function"), dict):
        name: str = value["function"].get("name")
        if not any(t["name"] == name for t in tools):
            raise _bad(f"'{field}' names a function that is not in 'tools': {name!r}.",
                       f"{field}.function.name")
        return name
    raise _bad(f"'{field}' must be 'none', 'auto', 'required' or {{\"type\": \"function\", "
               "\"function\": {\"name\": ...}}.", field, "invalid_type")


def _call_schema(tools: list[dict[str, Any]]) -> dict[str, Any]:
    options = [{"type": "object", "additionalProperties": False, "required": ["name", "arguments"],
                "properties": {"name": {"const": t["name"]}, "arguments": t["parameters"]}} for t in tools]
    schema = options[0] if len(options) == 1 else {"anyOf": options}
    return {**schema, "x-guidance": structured.JSON_OPTIONS}


def tool_constraint(tools: list[dict[str, Any]], choice: str, *,
                    parallel: bool = True) -> dict[str, Any] | None:
    """The grammar of a reply (``{"type": "lark", "grammar": ...}``), or None for 'none'."""
    if choice == "none":
        return None
    allowed = tools if choice in ("auto", "required") else [t for t in tools if t["name"] == choice]
    calls = f'("{CALL_MARK}" call)+' if parallel else f'"{CALL_MARK}" call'
    lines = ["%llguidance {}", "start: " + ("free | calls" if choice == "auto" else "calls"),
             f"calls: {calls}", f"call: %json {json.dumps(_call_schema(allowed))}"]
    if choice == "auto":
        lines += ["free: FREE", r"FREE: /[^<][\s\S]*/"]
    return {"type": "lark", "grammar": "\n".join(lines) + "\n"}


def tools_prompt(tools: list[dict[str, Any]], choice: str) -> str:
    """The system text that tells the model about its tools."""
    shown = tools if choice in ("auto", "required") else [t for t in tools if t["name"] == choice]
    lines = ["You can call functions. To call one, reply with "
             f'{CALL_MARK}{{"name": <function name>, "arguments": <arguments object>}} and nothing else.']
    if choice == "auto":
        lines.append("Call a function only when it helps; otherwise answer in plain text.")
    lines.append("Functions:")
    for t in shown:
        lines.append(f"- {t['name']}: {t['description'] or '(no description)'} Parameters: "
                     f"{json.dumps(t['parameters'], separators=(',', ':'))}")
    return "\n".join(lines)


def call_text(calls: list[dict[str, Any]]) -> str:
    """An assistant turn's ``tool_calls`` as the text the model would have written."""
    out = []
    for call in calls:
        fn = call["function"]
        arguments = fn["arguments"]
        try:
            arguments = json.loads(arguments)
        except (TypeError, ValueError):
            pass
        body = json.dumps({"name": fn["name"], "arguments": arguments}, separators=(",", ":"))
        out.append(CALL_MARK + body)
    return "".join(out)


def parse_calls(text: str) -> list[dict[str, Any]] | None:
    """The calls in a reply, in OpenAI's ``tool_calls`` shape (None: the reply is prose)."""
    if not text.startswith(CALL_MARK):
        return None
    calls, decoder = [], json.JSONDecoder()
    rest = text
    while rest.startswith(CALL_MARK):
        try:
            call, end = decoder.raw_decode(rest[len(CALL_MARK):])
        except ValueError:
            break  # cut short by max_tokens: what was complete is kept
        calls.append({"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
                      "function": {"name": call["name"],
                                   "arguments": json.dumps(call["arguments"], separators=(",", ":"))}})
        rest = rest[len(CALL_MARK) + end:]
    return calls
