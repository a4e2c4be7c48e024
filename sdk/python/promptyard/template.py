"""`{{name}}` templates, rendered exactly as the server renders them
(playground/templating.py): one regex pass, values inserted as plain text and
never expanded again; missing and unknown variables are errors."""

from __future__ import annotations

import re
from collections.abc import Mapping

from .errors import RenderError

VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def template_variables(*texts: str) -> list[str]:
    """Variable names used in the texts, in first-use order."""
    seen: dict[str, None] = {}
    for text in texts:
        for match in VARIABLE.finditer(text):
            seen.setdefault(match.group(1), None)
    return list(seen)


def render_texts(texts: Mapping[str, str], *, declared: Mapping[str, str | None],
                 values: Mapping[str, object]) -> dict[str, str]:
    if not isinstance(values, Mapping):
        raise RenderError("variables must be a mapping of name -> value.", code="invalid_request", names=[])
    used = template_variables(*texts.values())
    unknown = sorted(set(values) - set(used) - set(declared))
    if unknown:
        raise RenderError(f"Unknown variables: {', '.join(unknown)}.", code="unknown_variables",
                          names=unknown)
    bad = sorted(k for k, v in values.items() if not isinstance(v, str | int | float) or isinstance(v, bool))
    if bad:
        raise RenderError(f"Variable values must be strings or numbers: {', '.join(bad)}.",
                          code="invalid_variable_value", names=bad)
    resolved = {name: str(values[name]) if name in values else declared.get(name) for name in used}
    missing = [name for name in used if resolved[name] is None]
    if missing:
        raise RenderError(f"Missing variables: {', '.join(missing)}.", code="missing_variables",
                          names=missing)
    return {key: VARIABLE.sub(lambda m: str(resolved[m.group(1)]), text) for key, text in texts.items()}
