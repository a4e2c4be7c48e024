"""The rules for what a generation may ask for, written once: sampling
parameters, chat messages and their text.

The gateway (/v1 and runs of saved versions), the playground (saving a
version) and the worker's engines all check with these functions, against one
set of settings (INFERENCE_TEMPERATURE_MAX, INFERENCE_MAX_TOKENS_LIMIT,
INFERENCE_MAX_STOP_SEQUENCES in config/settings/inference.py). Each raises
`InvalidInput` naming the field; the caller turns it into its own error shape
(a 400 with a stable code, or an engine error).
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard

from django.conf import settings

ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
# OpenAI's seed is a 64-bit integer; above this an upstream server may refuse it.
SEED_MAX = 2**63 - 1


class InvalidInput(ValueError):
    """``field``: the dotted path of the bad value (``messages[2].content``).
    ``kind``: what is wrong, in OpenAI's error codes: ``invalid_type``,
    ``invalid_value``, ``integer_below_min_value``, ``integer_above_max_value``,
    or ``invalid_unicode`` (text no encoder can write, see `check_text`)."""

    def __init__(self, message: str, *, field: str, kind: str):
        super().__init__(message)
        self.field = field
        self.kind = kind


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def encode_text(text: str, *, field: str) -> bytes:
    """``text`` as UTF-8. JSON's ``"\\ud800"`` escape decodes to a lone UTF-16
    surrogate, which no tokenizer, database or UTF-8 encoder accepts: refused
    here, at the edge, naming the field."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"'{field}' contains a lone UTF-16 surrogate (character {exc.start}); "
                           "send valid Unicode text.", field=field, kind="invalid_unicode") from None


def check_text(text: str, *, field: str) -> str:
    encode_text(text, field=field)
    return text


def _integer(value: object, field: str, low: int, high: int, *, echo_high: bool = True) -> int:
    """An integer in [low, high], refused in OpenAI's words (`echo_high`: the
    too-large message repeats the value)."""
    if not _is_int(value):
        raise InvalidInput(f"Invalid type for '{field}': expected an integer.", field=field,
                           kind="invalid_type")
    if value < low:
        raise InvalidInput(f"Invalid '{field}': integer below minimum value. Expected a value >= {low}, "
                           f"but got {value} instead.", field=field, kind="integer_below_min_value")
    if value > high:
        got = f", but got {value} instead" if echo_high else ""
        raise InvalidInput(f"Invalid '{field}': integer above maximum value. Expected a value <= "
                           f"{high}{got}.", field=field, kind="integer_above_max_value")
    return value


def _number(value: object, field: str, low: float, high: float, *, low_open: bool = False) -> float:
    """A finite number in [low, high] (in (low, high] where `low_open`), as a float."""
    if not _is_number(value):
        raise InvalidInput(f"Invalid type for '{field}': expected a number.", field=field,
                           kind="invalid_type")
    above_low = value > low if low_open else value >= low
    if not (math.isfinite(value) and above_low and value <= high):
        bracket = "(" if low_open else "["
        raise InvalidInput(f"Invalid '{field}': {value} is outside the allowed range "
                           f"{bracket}{low}, {high}].", field=field, kind="invalid_value")
    return float(value)


def check_max_tokens(value: object, *, field: str = "max_tokens") -> int:
    return _integer(value, field, 1, settings.INFERENCE_MAX_TOKENS_LIMIT)


def check_temperature(value: object, *, field: str = "temperature") -> float:
    return _number(value, field, 0, settings.INFERENCE_TEMPERATURE_MAX)


def check_top_p(value: object, *, field: str = "top_p") -> float:
    return _number(value, field, 0, 1, low_open=True)


def check_stop(value: object, *, field: str = "stop") -> list[str]:
    most = settings.INFERENCE_MAX_STOP_SEQUENCES
    if not isinstance(value, list | tuple) or len(value) > most \
            or not all(isinstance(s, str) and s for s in value):
        raise InvalidInput(f"'{field}' must be a list of at most {most} non-empty strings.", field=field,
                           kind="invalid_type")
    for i, s in enumerate(value):
        check_text(s, field=f"{field}[{i}]")
    return list(value)


def check_seed(value: object, *, field: str = "seed") -> int:
    return _integer(value, field, 0, SEED_MAX, echo_high=False)


def sampling_parameters() -> list[dict[str, Any]]:
    """The sampling parameters a request may set, with the bounds the checks
    above apply: what the playground draws its controls from."""
    return [
        {"name": "temperature", "type": "number", "min": 0, "max": settings.INFERENCE_TEMPERATURE_MAX,
         "step": 0.05, "default": 1.0},
        {"name": "top_p", "type": "number", "min": 0, "min_exclusive": True, "max": 1, "step": 0.05,
         "default": 1.0},
        {"name": "max_tokens", "type": "integer", "min": 1, "max": settings.INFERENCE_MAX_TOKENS_LIMIT,
         "default": settings.INFERENCE_DEFAULT_MAX_TOKENS},
        {"name": "stop", "type": "strings", "max_items": settings.INFERENCE_MAX_STOP_SEQUENCES,
         "default": []},
        {"name": "seed", "type": "integer", "min": 0, "max": SEED_MAX, "default": None},
    ]


_CHECKS = {"max_tokens": check_max_tokens, "temperature": check_temperature, "top_p": check_top_p,
           "stop": check_stop, "seed": check_seed}


def check_sampling(**params: Any) -> None:
    """Check the sampling parameters given (None: not given, the default applies)."""
    for name, value in params.items():
        if value is not None:
            _CHECKS[name](value)


def check_messages(messages: object, *, field: str = "messages") -> list[dict[str, Any]]:
    """A chat: a non-empty list of {"role", "content"} with a known role and
    text content (valid Unicode), the last one not empty. Returns clean copies
    holding only role and content."""
    if not isinstance(messages, list):
        raise InvalidInput(f"'{field}' must be an array of message objects.", field=field,
                           kind="invalid_type")
    if not messages:
        raise InvalidInput(f"'{field}' must contain at least one message.", field=field,
                           kind="invalid_value")
    cleaned = []
    for i, message in enumerate(messages):
        where = f"{field}[{i}]"
        if not isinstance(message, dict):
            raise InvalidInput(f"'{where}' must be an object.", field=where, kind="invalid_type")
        role = message.get("role")
        if not isinstance(role, str) or role not in ROLES:  # a JSON object is unhashable
            raise InvalidInput(f"'{where}.role' must be one of {', '.join(sorted(ROLES))}.",
                               field=f"{where}.role", kind="invalid_value")
        content = message.get("content")
        if not isinstance(content, str):
            raise InvalidInput(f"'{where}.content' must be a string.", field=f"{where}.content",
                               kind="invalid_type")
        check_text(content, field=f"{where}.content")
        cleaned.append({"role": role, "content": content})
    if not cleaned[-1]["content"]:
        last = f"{field}[{len(cleaned) - 1}].content"
        raise InvalidInput("The last message has no content.", field=last, kind="invalid_value")
    return cleaned
