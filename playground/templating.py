"""`{{name}}` templates. Substitution is one regex pass: values are inserted
as plain text, never evaluated, and a value containing `{{x}}` is not
expanded again."""

from __future__ import annotations

import re

from core.error_codes import DomainError
from core.templating import VARIABLE
from inference_protocol.validation import InvalidInput, check_text

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def template_variables(*texts: str) -> list[str]:
    """Variable names used in the texts, in first-use order."""
    seen: dict[str, None] = {}
    for text in texts:
        for match in VARIABLE.finditer(text):
            seen.setdefault(match.group(1), None)
    return list(seen)


def template_render(*, texts: dict[str, str], declared: dict, values: dict) -> dict[str, str]:
    """Render each named text. Missing variables (no value, no default) are all
    named in one 400; values for variables neither used nor declared are a 400."""
    if not isinstance(values, dict):
        raise DomainError("variables must be an object.", code="invalid_request", field="variables")
    used = template_variables(*texts.values())
    known = set(used) | set(declared)
    unknown = sorted(set(values) - known)
    if unknown:
        raise DomainError(f"Unknown variables: {', '.join(unknown)}.", code="unknown_variables",
                          field="variables", extra={"unknown": unknown})
    bad = sorted(k for k, v in values.items() if not isinstance(v, str | int | float) or isinstance(v, bool))
    if bad:
        raise DomainError(f"Variable values must be strings or numbers: {', '.join(bad)}.",
                          code="invalid_variable_value", field="variables", extra={"invalid": bad})
    for name, value in values.items():
        if isinstance(value, str):
            try:
                check_text(value, field=f"variables.{name}")
            except InvalidInput as exc:
                raise DomainError(str(exc), code="invalid_unicode", field=exc.field) from None
    resolved = {name: str(values[name]) if name in values else declared.get(name) for name in used}
    missing = [name for name in used if resolved[name] is None]
    if missing:
        raise DomainError(f"Missing variables: {', '.join(missing)}.", code="missing_variables",
                          field="variables", extra={"missing": missing})
    return {key: VARIABLE.sub(lambda m: resolved[m.group(1)], text) for key, text in texts.items()}
