"""What an export describes, independent of the language it is written in.

Templates are cut into literal text and variable references here, with the
same pattern the server renders with (core.templating.VARIABLE), so
the exported code only concatenates: it never parses a template at run time
and cannot disagree with the server about what `{{ name }}` means. A value
is inserted as plain text and never expanded again, as on the server.
"""

from __future__ import annotations

import dataclasses
import re

from core.templating import VARIABLE
from playground.models import PromptVersion
from playground.templating import template_variables

from ..builder import template_texts, version_params


@dataclasses.dataclass(frozen=True)
class Ref:
    """A variable's place in a template."""

    name: str


Part = str | Ref


@dataclasses.dataclass(frozen=True)
class Message:
    role: str
    parts: tuple[Part, ...]
    local: str  # what the exported code calls the rendered text: "system", "turn_<n>" or "user"
    extra: tuple[tuple[str, object], ...] = ()  # an assistant turn's tool_calls, a tool turn's tool_call_id


@dataclasses.dataclass(frozen=True)
class Variable:
    name: str
    default: str | None  # None: no saved default, the caller must give a value


@dataclasses.dataclass(frozen=True)
class Reference:
    """Where a run by reference goes: a label (follows label moves) or a version id."""

    kind: str  # "label" or "version"
    name: str
    path: str


@dataclasses.dataclass(frozen=True)
class ExportSpec:
    title: str
    prompt_id: str
    version_id: str
    version_number: int
    model: str
    params: dict
    messages: tuple[Message, ...]
    variables: tuple[Variable, ...]
    base_url: str
    reference: Reference


def template_parts(text: str) -> tuple[Part, ...]:
    parts: list[Part] = []
    position = 0
    for match in VARIABLE.finditer(text):
        if match.start() > position:
            parts.append(text[position:match.start()])
        parts.append(Ref(match.group(1)))
        position = match.end()
    if position < len(text):
        parts.append(text[position:])
    return tuple(parts)


def export_spec(*, version: PromptVersion, body: str, base_url: str, reference: Reference) -> ExportSpec:
    messages = []
    if version.system.strip():  # the same rule as playground.calls.builder.render_messages
        messages.append(Message("system", template_parts(version.system), "system"))
    for i, turn in enumerate(version.messages, start=1):
        messages.append(Message(turn["role"], template_parts(turn["content"]), f"turn_{i}",
                                tuple((k, v) for k, v in turn.items() if k not in ("role", "content"))))
    messages.append(Message("user", template_parts(body), "user"))
    used = template_variables(*template_texts(system=version.system, messages=version.messages,
                                              body=body).values())
    return ExportSpec(
        title=version.prompt.title, prompt_id=str(version.prompt_id), version_id=str(version.pk),
        version_number=version.number, model=version.model_name, params=version_params(version),
        messages=tuple(messages),
        variables=tuple(Variable(name, (version.variables or {}).get(name)) for name in used),
        base_url=base_url.rstrip("/"), reference=reference)


def identifiers(names, *, reserved: set[str], transform=lambda name: name) -> dict[str, str]:
    """name -> an identifier for the exported code, distinct from `reserved`
    (keywords, the snippet's own names) and from each other; a clash gets a
    suffix rather than silently sharing one variable."""
    taken = set(reserved)
    out = {}
    for name in names:
        candidate = base = transform(name)
        counter = 1
        while candidate in taken:
            candidate = f"{base}_{counter}" if counter > 1 else f"{base}_"
            counter += 1
        taken.add(candidate)
        out[name] = candidate
    return out


_SAFE_COMMENT = re.compile(r"[^\w .,:;!?()\[\]/@#&+=%'-]", re.UNICODE)


def comment_text(text: str, limit: int = 60) -> str:
    """A title safe inside any language's line comment or docstring: no line
    breaks, quotes, backslashes or comment closers."""
    cleaned = " ".join(_SAFE_COMMENT.sub(" ", text).split())[:limit].strip()
    return cleaned or "untitled"
