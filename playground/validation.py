"""`check_*`: validate version input before anything is written. Each error
is a 400 that names the field."""

from __future__ import annotations

import math

from django.conf import settings

from core.errors import ApiError

from .templating import NAME


def _bad(field: str, message: str, code: str = "invalid_request") -> ApiError:
    return ApiError(message, code=code, field=field)


def check_utf8(text: str, *, field: str, max_bytes: int) -> bytes:
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates from "\ud800" in JSON
        raise _bad(field, f"{field} is not valid UTF-8 text.", "body_not_utf8") from exc
    if len(data) > max_bytes:
        raise _bad(field, f"{field} is {len(data)} bytes; the maximum is {max_bytes}.", "body_too_large")
    return data


def check_params(*, model_name, temperature, max_tokens, top_p, stop, variables, response_schema) -> None:
    if model_name not in settings.INFERENCE_MODELS:
        known = ", ".join(sorted(settings.INFERENCE_MODELS))
        raise _bad("model", f"Unknown model {model_name!r}; known models: {known}.", "unknown_model")
    if temperature is not None and not (
        isinstance(temperature, int | float) and math.isfinite(temperature)
        and 0 <= temperature <= settings.PROMPT_TEMPERATURE_MAX
    ):
        raise _bad("temperature", f"temperature must be between 0 and {settings.PROMPT_TEMPERATURE_MAX}.",
                   "out_of_range")
    if top_p is not None and not (isinstance(top_p, int | float) and 0 < top_p <= 1):
        raise _bad("top_p", "top_p must be greater than 0 and at most 1.", "out_of_range")
    if max_tokens is not None and not (
        isinstance(max_tokens, int) and 1 <= max_tokens <= settings.PROMPT_MAX_TOKENS_LIMIT
    ):
        raise _bad("max_tokens", f"max_tokens must be between 1 and {settings.PROMPT_MAX_TOKENS_LIMIT}.",
                   "out_of_range")
    if not isinstance(stop, list) or len(stop) > settings.PROMPT_MAX_STOP_SEQUENCES or not all(
        isinstance(s, str) and s for s in stop
    ):
        raise _bad("stop", f"stop must be a list of at most {settings.PROMPT_MAX_STOP_SEQUENCES} "
                   "non-empty strings.")
    if not isinstance(variables, dict):
        raise _bad("variables", "variables must be an object of name -> default (string or null).")
    for name, default in variables.items():
        if not NAME.match(name):
            raise _bad("variables", f"Invalid variable name {name!r}.")
        if default is not None and not isinstance(default, str):
            raise _bad("variables", f"The default of {name!r} must be a string or null.")
    if response_schema is not None and not isinstance(response_schema, dict):
        raise _bad("response_schema", "response_schema must be a JSON object.")
