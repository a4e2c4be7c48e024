"""String literals for exported code that evaluate to exactly the saved text.

Printable characters stay as they are (readable code, unicode included);
quotes and backslashes are escaped; every character that is invisible or
that a source file, a terminal or a shell could treat specially (controls,
NUL, line and paragraph separators, format characters such as bidi
overrides, unassigned code points) is written as an escape. Each language
gets its own escape syntax: Python `\\U0001f600`, JavaScript `\\u{1f600}`,
JSON a surrogate pair.
"""

from __future__ import annotations

import json
import unicodedata

_SHORT = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(char: str) -> bool:
    category = unicodedata.category(char)
    if char == " ":
        return True
    return not (category[0] == "C" or category in ("Zl", "Zp", "Zs"))


def _escape(text: str, escape_one) -> str:
    out = []
    for char in text:
        if char in _SHORT:
            out.append(_SHORT[char])
        elif _visible(char):
            out.append(char)
        else:
            out.append(escape_one(ord(char)))
    return "".join(out)


def _py_escape(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _js_escape(code: int) -> str:
    return f"\\u{code:04x}" if code < 0x10000 else f"\\u{{{code:x}}}"


def _json_escape(code: int) -> str:
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a surrogate pair: JSON has no longer escape
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def py_str(text: str) -> str:
    return '"' + _escape(text, _py_escape) + '"'


def js_str(text: str) -> str:
    return '"' + _escape(text, _js_escape) + '"'


def json_fragment(text: str) -> str:
    """The inside of a JSON string literal (no quotes)."""
    return _escape(text, _json_escape)


def json_str(text: str) -> str:
    return '"' + json_fragment(text) + '"'


def sh_quote(text: str) -> str:
    """A single-quoted shell word: nothing inside is expanded; a quote is
    closed, escaped and reopened. (Shells cannot hold NUL: callers keep NUL
    out, e.g. by passing JSON-escaped text.)"""
    if "\0" in text:
        raise ValueError("a shell word cannot contain NUL")
    return "'" + text.replace("'", "'\\''") + "'"


def _literal(value, literal, string, key, sep: str = ", ", colon: str = ": ", scalar=json.dumps) -> str:
    """A literal for a JSON-like value: strings through ``string``, object
    keys through ``key``, items (through ``literal``, the caller itself)
    joined by ``sep``; anything else through ``scalar``."""
    if isinstance(value, str):
        return string(value)
    if isinstance(value, list):
        return "[" + sep.join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + sep.join(f"{key(k)}{colon}{literal(v)}" for k, v in value.items()) + "}"
    return scalar(value)


def _py_scalar(value) -> str:
    if value is None or isinstance(value, bool):  # JSON's true / false / null are not Python
        return {None: "None", True: "True", False: "False"}[value]
    return json.dumps(value)  # numbers: the same digits as the JSON the server saved


def py_value(value) -> str:
    """A Python literal for a JSON-like value (parameters, stop lists, tools)."""
    return _literal(value, py_value, py_str, py_str, scalar=_py_scalar)


def js_key(name: str) -> str:
    """A property name in an object literal. `"__proto__": v` would set the
    object's prototype instead of making a property; a computed key does not."""
    return f"[{js_str(name)}]" if name == "__proto__" else js_str(name)


def js_value(value) -> str:
    return _literal(value, js_value, js_str, js_key)


def json_value(value) -> str:
    return _literal(value, json_value, json_str, json_str, sep=",", colon=":")
