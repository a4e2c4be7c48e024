"""Ids from clients: counters (ASCII digits only, and small enough for a bigint) and UUIDs.

`str.isdigit()` accepts "²" and 5,000-digit strings; int() of the first raises,
the second overflows the database's bigint: both were 500s or crashed sockets."""

from __future__ import annotations

import re
import uuid

DB_INT_MAX = 2**63 - 1
_DIGITS = re.compile(r"[0-9]{1,19}")


def parse_uint(value: object) -> int | None:
    """A non-negative integer that fits a bigint, from an int or a string of ASCII
    digits; None for anything else (bools, floats, "²", "-1", "1e3", huge values)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and _DIGITS.fullmatch(value):
        number = int(value)
    else:
        return None
    return number if number <= DB_INT_MAX and number >= 0 else None


def parse_uuid(value: object) -> uuid.UUID | None:
    """A UUID from a client's value (any of its string forms); None for anything else."""
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def is_uuid(value: object) -> bool:
    return parse_uuid(value) is not None
