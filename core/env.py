"""Tiny helpers to read typed environment variables.

A value that does not parse is a SettingError naming the variable and what it
should be: every process prints that one line and exits (core/startup.py), never
a traceback."""

import json
import os
from typing import Any

from django.core.exceptions import ImproperlyConfigured


class SettingError(ImproperlyConfigured):
    pass


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _parsed(name: str, kind: type, what: str) -> Any:
    value = os.environ[name]
    try:
        return kind(value)
    except ValueError:
        raise SettingError(f"{name}={value!r} is not {what}: set it to {what} or unset it") from None


def env_int(name: str, default: int) -> int:
    return _parsed(name, int, "an integer") if os.environ.get(name) else default


def env_float(name: str, default: float) -> float:
    return _parsed(name, float, "a number") if os.environ.get(name) else default


def env_json(name: str, default: Any) -> Any:
    """A JSON value; ``default`` (a Python value) when unset or empty."""
    if not os.environ.get(name):
        return default
    try:
        return json.loads(os.environ[name])
    except json.JSONDecodeError as exc:
        raise SettingError(f"{name} is not valid JSON ({exc})") from None
