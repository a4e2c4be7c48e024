"""User-supplied regular expressions and JSON schemas, run on RE2 only.

Python's `re` backtracks: `(?s)^(?:.|.)*\\x00$` over a few dozen characters
holds the GIL for ever, which freezes every thread and the event loop of the
process. So every pattern a user supplies goes through this module: the
`regex` evaluator's, and `pattern` / `patternProperties` in the JSON schemas
the server validates JSON against (the `json_schema` evaluator, judge
schemas). RE2 matches in time linear in the text and releases the GIL while
it does. What RE2 cannot compile (backreferences, lookarounds, Python's \\Z)
is refused when it is saved: a 400 with the code `unsupported_pattern`
naming the field.

Schemas are validated by jsonschema's classes for drafts 6, 7, 2019-09 and
2020-12 (the default), with the keywords that run patterns replaced by RE2
ones. Drafts 3 and 4 are refused (their meta-schemas leave the keys of
`patternProperties` unchecked), as is `unevaluatedProperties` in a schema
with `patternProperties` (jsonschema resolves that pair with Python's `re`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any

import jsonschema
import re2
from django.conf import settings
from jsonschema.exceptions import ValidationError, best_match

from core.error_codes import DomainError


class PatternRefused(ValueError):
    """A pattern or schema this module will not run; `code` and `limit` go into the 400."""

    def __init__(self, message: str, *, code: str = "unsupported_pattern", limit: int | None = None):
        super().__init__(message)
        self.code = code
        self.limit = limit


def _options() -> re2.Options:
    options = re2.Options()
    options.max_mem = settings.USER_PATTERN_MAX_MEM
    options.log_errors = False
    return options


def compile_pattern(pattern: str) -> Any:
    """The RE2 program of a pattern (cached by re2); PatternRefused when RE2 cannot run it."""
    limit = settings.USER_PATTERN_MAX_CHARS
    if len(pattern) > limit:
        raise PatternRefused(f"The pattern is {len(pattern)} characters; the maximum is {limit}.",
                             code="pattern_too_long", limit=limit)
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if isinstance(exc.args[0], bytes) else str(exc)
        raise PatternRefused(
            f"The pattern cannot run on RE2 ({reason}). Patterns use RE2's syntax, which matches in linear "
            "time: no backreferences or lookarounds, \\z for the end of the text.",
            limit=settings.USER_PATTERN_MAX_MEM if "too large" in reason else None) from None


def refusal(exc: PatternRefused, field: str) -> DomainError:
    extra = {"limit": exc.limit} if exc.limit is not None else {}
    return DomainError(str(exc), code=exc.code, field=field, extra=extra)


def check_pattern(pattern: str, *, field: str) -> None:
    """A 400 naming `field` unless RE2 can run `pattern`."""
    try:
        compile_pattern(pattern)
    except PatternRefused as exc:
        raise refusal(exc, field) from None


def matches(pattern: str, text: str, *, full: bool = False) -> bool:
    """Whether `pattern` matches `text` (anywhere, or the whole of it with `full`)."""
    regexp = compile_pattern(pattern)
    data = text.encode("utf-8", "surrogatepass")  # RE2 reads UTF-8; a lone surrogate matches nothing
    return (regexp.fullmatch(data) if full else regexp.search(data)) is not None


# The RE2 versions of jsonschema's keywords that run patterns (same results, same messages).

def _pattern(validator: Any, pattern: str, instance: Any,
             schema: dict[str, Any]) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not matches(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, pattern_properties: dict[str, Any], instance: Any,
                        schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            if matches(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any,
                           schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = sorted((key for key in instance if key not in properties
                     and not any(matches(p, key) for p in patterns)), key=str)
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        joined = ", ".join(repr(each) for each in extras)
        if patterns:
            yield ValidationError(f"{joined} {'does' if len(extras) == 1 else 'do'} not match any of the "
                                  f"regexes: {', '.join(repr(p) for p in sorted(patterns))}")
        else:
            yield ValidationError(f"Additional properties are not allowed ({joined} "
                                  f"{'was' if len(extras) == 1 else 'were'} unexpected)")


_RE2_KEYWORDS = {"pattern": _pattern, "patternProperties": _pattern_properties,
                 "additionalProperties": _additional_properties}
_DRAFTS = (jsonschema.Draft6Validator, jsonschema.Draft7Validator, jsonschema.Draft201909Validator,
           jsonschema.Draft202012Validator)
_RE2_VALIDATORS = {draft: jsonschema.validators.extend(draft, _RE2_KEYWORDS) for draft in _DRAFTS}


def _keys(schema: Any) -> set[str]:
    """Every object key anywhere in `schema` (an explicit stack: no recursion limit to hit)."""
    keys: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            keys.update(k for k in node if isinstance(k, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return keys


def _draft(schema: dict[str, Any]) -> Any:
    """The draft of `schema` (its $schema, else 2020-12), refused where patterns would escape RE2."""
    draft = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    if draft not in _RE2_VALIDATORS:
        raise PatternRefused(f"JSON Schema {draft.__name__.removesuffix('Validator')} is not supported: "
                             "use draft 6, 7, 2019-09 or 2020-12 (the default).", code="unsupported_schema")
    if {"unevaluatedProperties", "patternProperties"} <= _keys(schema):
        raise PatternRefused("unevaluatedProperties cannot be combined with patternProperties (patterns "
                             "run on RE2, and that pair is resolved by Python's backtracking re).",
                             code="unsupported_schema")
    return draft


@functools.cache
def _meta_validator(draft: Any) -> Any:
    checker = jsonschema.FormatChecker()
    checker.checkers = {**draft.FORMAT_CHECKER.checkers}
    checker.checks("regex", raises=PatternRefused)(lambda value: not isinstance(value, str)
                                                   or bool(compile_pattern(value)))
    meta = jsonschema.validators.validator_for(draft.META_SCHEMA, default=draft)
    return meta(draft.META_SCHEMA, format_checker=checker)


def _refused_pattern(errors: Iterable[ValidationError]) -> tuple[PatternRefused, ValidationError] | None:
    stack = list(errors)
    while stack:
        error = stack.pop()
        if isinstance(error.cause, PatternRefused):
            return error.cause, error
        stack.extend(error.context)
    return None


def check_schema(schema: dict[str, Any], *, field: str, invalid_code: str) -> None:
    """A 400 unless `schema` is a valid JSON Schema whose every pattern RE2 can run.
    An invalid schema is `invalid_code`; a pattern RE2 refuses names its place in the schema."""
    try:
        draft = _draft(schema)
    except PatternRefused as exc:
        raise refusal(exc, field) from None
    errors = list(_meta_validator(draft).iter_errors(schema))
    refused = _refused_pattern(errors)
    if refused is not None:
        pattern_refused, error = refused
        where = ".".join([field, *(str(p) for p in error.absolute_path)])
        raise refusal(pattern_refused, where)
    if errors:
        raise DomainError(f"The schema is not a valid JSON Schema: {best_match(errors).message}.",
                          code=invalid_code, field=field)


def schema_error(schema: dict[str, Any], instance: Any) -> ValidationError | None:
    """The most relevant way `instance` fails `schema` (None when it is valid).
    PatternRefused for a stored schema this module would refuse now."""
    validator = _RE2_VALIDATORS[_draft(schema)](schema)
    return best_match(validator.iter_errors(instance))
