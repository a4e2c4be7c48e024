"""The field-aware diff of two versions (GET /api/prompts/<id>/diff/fields):

- `fields`: the model and parameters, and each declared variable's default,
  as rows {field, from, to, changed} (a variable row leaves `from` or `to`
  out where that version does not declare it; null is "no default");
- `messages`: what a run sends, as a list (the system text unless blank,
  the turns, the body as the last user message), aligned between the two
  versions (system with system, body with body, turns by sequence matching on
  role and content), each with the line or word diff of its text and the JSON
  diff of its other keys (tool_calls, tool_call_id);
- `tools` and `response_schema`: JSON diffs (playground.jsondiff).

One deadline (PROMPT_DIFF_TIMEOUT_S) bounds all matching; past it the answer
is correct but coarser ("coarse": true). Text diffs share an allowance of
PROMPT_DIFF_INLINE_MAX_CHARS characters: past it a message's diff stops at a
hunk boundary, flagged `truncated` (the body's whole diff streams from
GET .../diff). The JSON diffs (tools and schema first, then the messages'
other keys) share PROMPT_DIFF_JSON_MAX_OPS operations and
PROMPT_DIFF_JSON_MAX_CHARS characters of values.
"""

from __future__ import annotations

import json

from django.conf import settings

from .diffing import COARSE_NOTE, line_diff, word_diff
from .jsondiff import JsonLimits, json_diff
from .matching import Budget
from .models import PromptVersion
from .services import VERSION_FIELDS

# The table's rows: each field a run uses that has no section of its own, as
# (name in the API, attribute of the version).
_SECTIONS = {"body_sha256", "system", "messages", "variables", "response_schema", "tools"}
PARAMETERS = [("model" if f == "model_name" else f, f) for f in VERSION_FIELDS if f not in _SECTIONS]


def _fields(old: PromptVersion, new: PromptVersion) -> list[dict]:
    rows = []
    for name, attr in PARAMETERS:
        a, b = getattr(old, attr), getattr(new, attr)
        rows.append({"field": name, "from": a, "to": b, "changed": a != b})
    for name in [*old.variables, *(n for n in new.variables if n not in old.variables)]:
        row: dict = {"field": f"variables.{name}"}
        for end, version in (("from", old), ("to", new)):
            if name in version.variables:
                row[end] = version.variables[name]
        both = "from" in row and "to" in row
        row["changed"] = not both or row["from"] != row["to"]
        rows.append(row)
    return rows


def _text(message: dict) -> str:
    return message.get("content") or ""  # an assistant turn may hold only tool calls


def _name(kind: str, index: int | None, message: dict | None) -> str:
    """How a diff's header names one side: body, system, or messages[i] (the turn's role)."""
    if message is None:
        return "(none)"
    return kind if kind != "turn" else f"messages[{index}] {message.get('role')}"


def _extras(message: dict) -> dict:
    return {k: v for k, v in message.items() if k not in ("role", "content")}


class _Differ:
    def __init__(self, old: PromptVersion, new: PromptVersion, mode: str, budget: Budget):
        self.old, self.new, self.budget = old, new, budget
        self.diff = line_diff if mode == "line" else word_diff
        self.chars_left = settings.PROMPT_DIFF_INLINE_MAX_CHARS
        self.limits = JsonLimits(settings.PROMPT_DIFF_JSON_MAX_OPS, settings.PROMPT_DIFF_JSON_MAX_CHARS)

    def text(self, a: str, b: str, names: tuple[str, str]) -> tuple[str, bool]:
        """The diff of two texts, cut at a hunk boundary where the allowance runs out."""
        out, truncated = [], False
        chunks = self.diff(a, b, old_name=names[0], new_name=names[1],
                           context=settings.PROMPT_DIFF_CONTEXT_LINES, budget=self.budget)
        for chunk in chunks:
            if len(chunk) > self.chars_left:
                truncated = chunk != COARSE_NOTE  # the closing note is not part of the diff
                break
            out.append(chunk)
            self.chars_left -= len(chunk)
        return "".join(out), truncated

    def json(self, a, b) -> dict:
        return json_diff(a, b, budget=self.budget, limits=self.limits)

    def message(self, kind: str, a: tuple[int, dict] | None, b: tuple[int, dict] | None) -> dict:
        """One aligned pair: `a` from the old version, `b` from the new, (index, message) or None."""
        (ia, ma), (ib, mb) = a or (None, None), b or (None, None)
        ta, tb = _text(ma) if ma else "", _text(mb) if mb else ""
        ea, eb = _extras(ma) if ma else {}, _extras(mb) if mb else {}
        status = "added" if ma is None else "removed" if mb is None else (
            "same" if ta == tb and ea == eb else "changed")
        role = (mb or ma).get("role")
        names = (f"v{self.old.number} {_name(kind, ia, ma)}", f"v{self.new.number} {_name(kind, ib, mb)}")
        entry = {"kind": kind, "role": role, "status": status, "from_index": ia, "to_index": ib}
        if status == "same":
            return entry
        entry["diff"], entry["truncated"] = self.text(ta, tb, names) if ta != tb else ("", False)
        if ea != eb:
            entry["other"] = self.json(ea, eb)
        return entry

    def messages(self, bodies: tuple[str, str]) -> list[dict]:
        # As a run sends them (playground.calls.builder): a blank system text is no message.
        has_system = bool(self.old.system.strip()), bool(self.new.system.strip())
        lists = []
        for version, body, system in zip((self.old, self.new), bodies, has_system, strict=True):
            head = [{"role": "system", "content": version.system}] if system else []
            lists.append([*head, *version.messages, {"role": "user", "content": body}])
        old_list, new_list = lists
        out = []
        system_a = (0, old_list[0]) if has_system[0] else None
        system_b = (0, new_list[0]) if has_system[1] else None
        if system_a or system_b:
            out.append(self.message("system", system_a, system_b))
        out.extend(self.turns(old_list[bool(system_a):-1], new_list[bool(system_b):-1],
                              bool(system_a), bool(system_b)))
        body_a, body_b = (len(old_list) - 1, old_list[-1]), (len(new_list) - 1, new_list[-1])
        out.append(self.message("body", body_a, body_b))
        return out

    def turns(self, old: list[dict], new: list[dict], base_a: int, base_b: int) -> list[dict]:
        """Turns aligned by matching (role, text, other keys); inside a changed stretch,
        turns of the same role pair up as changed, the others are removed or added."""
        def key(m):
            return json.dumps([m.get("role"), _text(m), _extras(m)], sort_keys=True, ensure_ascii=False)

        def role(m):
            return str(m.get("role"))

        out = []
        for _, i1, i2, j1, j2 in self.budget.opcodes([key(m) for m in old], [key(m) for m in new]):
            olds = [(base_a + i, old[i]) for i in range(i1, i2)]
            news = [(base_b + j, new[j]) for j in range(j1, j2)]
            for tag, a1, a2, b1, b2 in self.budget.opcodes([role(m) for _, m in olds],
                                                           [role(m) for _, m in news]):
                if tag == "equal":
                    pairs = zip(olds[a1:a2], news[b1:b2], strict=True)
                    out.extend(self.message("turn", a, b) for a, b in pairs)
                    continue
                out.extend(self.message("turn", a, None) for a in olds[a1:a2])
                out.extend(self.message("turn", None, b) for b in news[b1:b2])
        return out


def _end(version: PromptVersion) -> dict:
    return {"id": str(version.pk), "number": version.number}


def version_diff(old: PromptVersion, new: PromptVersion, *, bodies: tuple[str, str], mode: str = "line",
                 budget: Budget | None = None) -> dict:
    """The field-aware diff from `old` to `new`; `bodies`: their body texts."""
    budget = budget or Budget(settings.PROMPT_DIFF_TIMEOUT_S)
    differ = _Differ(old, new, mode, budget)
    tools = differ.json(old.tools, new.tools)
    schema = differ.json(old.response_schema, new.response_schema)
    return {
        "from": _end(old), "to": _end(new), "mode": mode,
        "fields": _fields(old, new),
        "messages": differ.messages(bodies),
        "tools": tools,
        "response_schema": schema,
        "coarse": budget.coarse,  # read last: after all the matching
    }
