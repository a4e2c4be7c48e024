"""Structured output: OpenAI's ``response_format`` as a grammar that constrains decoding.

The gateway checks a request's ``response_format`` here (and compiles its schema
once, so a schema the grammar compiler cannot handle is a 400 naming what it
does not support, before anything is queued); the worker compiles the same
constraint into a token matcher (``inference_worker.engines.constrained``).

Grammars come from llguidance (the Rust library behind Guidance): it compiles a
JSON schema in about a millisecond and computes a token mask for SmolLM2's
49k-token vocabulary in 0.3-1 ms, where llama.cpp's own GBNF sampler checks
every candidate token against the grammar stacks at each step (6-11 ms per
token on the same vocabulary, 10-19x; bench/grammar.py).

A constraint travels to the worker as plain JSON:
``{"type": "json_object"}``, ``{"type": "json_schema", "name": ..., "schema": {...}}``, or
``{"type": "lark", "grammar": ...}`` (tool calls, inference_protocol.tools).
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any, cast

from inference_protocol.validation import InvalidInput

if TYPE_CHECKING:
    from llguidance._lib import JsonCompileOptions

# Compact JSON (no optional whitespace): fewer tokens, and a small model cannot
# spend its max_tokens on blank lines.
JSON_OPTIONS: JsonCompileOptions = {"whitespace_flexible": False}
# A JSON schema bigger than this (serialised) is refused: compiling is bounded.
MAX_SCHEMA_BYTES = 64 * 1024


def _bad(message: str, field: str, kind: str = "invalid_value") -> InvalidInput:
    return InvalidInput(message, field=field, kind=kind)


def check_response_format(value: object, *, field: str = "response_format") -> dict[str, Any] | None:
    """The constraint of an OpenAI ``response_format`` (None for plain text)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _bad(f"'{field}' must be an object like {{\"type\": \"json_object\"}}.", field, "invalid_type")
    kind = value.get("type")
    if kind == "text":
        extra = sorted(set(value) - {"type"})
        if extra:
            raise _bad(f"Unrecognized field '{field}.{extra[0]}'.", f"{field}.{extra[0]}")
        return None
    if kind == "json_object":
        extra = sorted(set(value) - {"type"})
        if extra:
            raise _bad(f"Unrecognized field '{field}.{extra[0]}'.", f"{field}.{extra[0]}")
        return {"type": "json_object"}
    if kind != "json_schema":
        raise _bad(f"'{field}.type' must be one of text, json_object, json_schema.", f"{field}.type")
    extra = sorted(set(value) - {"type", "json_schema", "strict"})
    if extra:
        raise _bad(f"Unrecognized field '{field}.{extra[0]}'.", f"{field}.{extra[0]}")
    spec = value.get("json_schema")
    where = f"{field}.json_schema"
    if not isinstance(spec, dict):
        raise _bad(f"'{where}' must be an object with 'name' and 'schema'.", where, "invalid_type")
    extra = sorted(set(spec) - {"name", "schema", "strict", "description"})
    if extra:
        raise _bad(f"Unrecognized field '{where}.{extra[0]}'.", f"{where}.{extra[0]}")
    name = spec.get("name")
    if not isinstance(name, str) or not name or len(name) > 64:
        raise _bad(f"'{where}.name' must be a string of 1-64 characters.", f"{where}.name", "invalid_type")
    schema = spec.get("schema", {})
    constraint = {"type": "json_schema", "name": name, "schema": schema}
    check_compiles(constraint, field=f"{where}.schema")
    return constraint


def check_schema(schema: object, *, field: str) -> dict[str, Any]:
    """A JSON schema that compiles to a grammar (tool parameters use this too)."""
    check_compiles({"type": "json_schema", "name": "schema", "schema": schema}, field=field)
    return cast(dict[str, Any], schema)  # check_compiles refused any other


def check_compiles(constraint: dict[str, Any], *, field: str) -> None:
    schema = constraint.get("schema")
    if constraint["type"] == "json_schema":
        if not isinstance(schema, dict):
            raise _bad(f"'{field}' must be a JSON schema object.", field, "invalid_type")
        if len(json.dumps(schema)) > MAX_SCHEMA_BYTES:
            raise _bad(f"'{field}' is larger than {MAX_SCHEMA_BYTES} bytes.", field)
    error = _validate(json.dumps(constraint, sort_keys=True))
    if error and not error.startswith("WARNING"):
        raise _bad(f"'{field}' cannot be enforced: {error}", field, "unsupported_schema")


@functools.lru_cache(maxsize=256)
def _validate(constraint_json: str) -> str:
    from llguidance import LLMatcher

    try:
        grammar = grammar_for(json.loads(constraint_json))
    except ValueError as exc:
        return str(exc)
    return LLMatcher.validate_grammar(grammar)


def grammar_for(constraint: dict[str, Any]) -> str:
    """The llguidance grammar (a JSON string) of a constraint."""
    from llguidance import LLMatcher

    if constraint["type"] == "lark":  # tool calls (inference_protocol.tools)
        return LLMatcher.grammar_from_lark(constraint["grammar"])
    schema = {"type": "object"} if constraint["type"] == "json_object" else constraint["schema"]
    return LLMatcher.grammar_from_json_schema(schema, defaults=JSON_OPTIONS)
