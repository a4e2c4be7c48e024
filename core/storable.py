"""Values a database can hold: PostgreSQL's text and jsonb hold no NUL and no
lone UTF-16 surrogate (JSON's "\\ud800" parses to one), which a refused request
may still carry into a record of what was asked."""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(value: Any) -> Any:
    """`value` (text, or parsed JSON) without NUL characters, lone surrogates as U+FFFD."""
    if isinstance(value, str):
        if value.isascii():
            return value.replace("\x00", "")
        return _SURROGATE.sub("\ufffd", value.replace("\x00", ""))
    if isinstance(value, list):
        return [storable(item) for item in value]
    if isinstance(value, dict):
        return {storable(key): storable(item) for key, item in value.items()}
    return value
