"""The `tool_calls` evaluator: the tool calls a reply made against the row's
expected calls, compared as structures (names equal, arguments equal as parsed
JSON: key order and spacing do not matter; the order of the calls does not
either).

The expected output is JSON: a list of calls, each {"name", "arguments"} (an
object) or OpenAI's {"type": "function", "function": {"name", "arguments"}}
(arguments as a JSON string); one call may stand alone; `[]` expects no call.
With `arguments: "subset"` a call may pass arguments beyond the expected ones.
Registered when the app is ready (evals.apps).
"""

from __future__ import annotations

import json

from core.error_codes import DomainError

from .evaluators import Score, register

MODES = ("exact", "subset")


class ExpectedCallsError(ValueError):
    pass


def _call(item) -> tuple[str, dict]:
    """(name, arguments) of a call in either shape."""
    if not isinstance(item, dict):
        raise ExpectedCallsError("a call is an object {name, arguments}")
    if isinstance(item.get("function"), dict):
        item = item["function"]
    name, arguments = item.get("name"), item.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            raise ExpectedCallsError(f"the arguments of {name!r} are not JSON") from None
    if not isinstance(name, str) or not name or not isinstance(arguments, dict):
        raise ExpectedCallsError("a call has a name and arguments (an object)")
    return name, arguments


def expected_calls(text: str | None) -> list[tuple[str, dict]]:
    try:
        value = json.loads(text or "")
    except ValueError:
        raise ExpectedCallsError("the expected output is not JSON") from None
    return [_call(item) for item in (value if isinstance(value, list) else [value])]


def _matches(want: tuple[str, dict], got: tuple[str, dict], subset: bool) -> bool:
    if want[0] != got[0]:
        return False
    if subset:
        return all(k in got[1] and got[1][k] == v for k, v in want[1].items())
    return want[1] == got[1]


def _show(call: tuple[str, dict]) -> str:
    return f"{call[0]}({json.dumps(call[1], sort_keys=True)[:200]})"


def _check(args: dict) -> None:
    if args.get("arguments", "exact") not in MODES:
        raise DomainError("tool_calls: arguments is exact or subset.", code="invalid_evaluator_args",
                          field="evaluators.tool_calls")


@register("tool_calls", kind="tool_calls", needs_expected=True, args=("arguments",), check=_check,
          doc="Compares the tool calls the reply made with the expected calls (a JSON list of "
              "{name, arguments}) as structures: names equal, arguments equal as JSON (key order "
              "does not matter; arguments=subset allows extra ones). Scores the share of calls that "
              "match; passes when every expected call is made and no other.")
def tool_calls(calls, *, expected, variables, args):
    try:
        want = expected_calls(expected)
    except ExpectedCallsError as exc:
        return Score(0.0, False, f"{exc}: expected a JSON list of calls {{name, arguments}}")
    try:
        got = [_call(c) for c in calls or []]
    except ExpectedCallsError as exc:
        return Score(0.0, False, f"the reply's calls do not read: {exc}")
    subset = args.get("arguments") == "subset"
    missing, extra = [], list(got)
    for call in want:
        hit = next((i for i, g in enumerate(extra) if _matches(call, g, subset)), None)
        if hit is None:
            missing.append(call)
        else:
            del extra[hit]
    matched = len(want) - len(missing)
    total = max(len(want), len(got))
    ok = not missing and not extra
    if not total:
        return Score(1.0, True)
    reasons = [f"missing {_show(c)}" for c in missing[:3]] + [f"unexpected {_show(c)}" for c in extra[:3]]
    if not got and want:
        reasons = ["the reply made no tool call", *reasons]
    return Score(matched / total, ok, "; ".join(reasons))
