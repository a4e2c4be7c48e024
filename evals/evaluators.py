"""Evaluators: small named, versioned functions that score one output.

Each takes the output text, the row's expected output (None when the row has
none), the row's variables and the evaluator's arguments, and returns a
`Score` (0..1, passed, a reason). A run stores each evaluator's name, version
and arguments, so its scores stay explained after an evaluator changes (a
changed evaluator gets a new version).

Built in:

| name | version | arguments | score |
|---|---|---|---|
| `exact` | 1 | `strip` (bool, default true), `case_sensitive` (default true) | 1 when output == expected |
| `contains` | 1 | `value` (default: the expected output), `case_sensitive` | 1 when the output contains it |
| `regex` | 2 | `pattern` (required, RE2 syntax), `full` (bool: the whole output must match) | 1 on a match |
| `json_valid` | 1 | - | 1 when the output parses as JSON |
| `json_schema` | 2 | `schema` (required, a JSON Schema; RE2 patterns) | 1 when it parses and validates |
| `numeric` | 1 | `tolerance` (absolute), `relative` (fraction) | 1 when its first number is close |
| `similarity` | 2 | `threshold` (default 0.8) | share of characters in a common subsequence; passes at it |
| `tool_calls` | 1 | `arguments` (`exact` or `subset`) | share of expected calls made (evaluator_tools.py) |
| `judge` | 1 | `prompt`, `version` (a saved prompt version), `threshold` (default 0.5) | the judge's score |

**LLM-as-judge.** A judge is a saved prompt version, so it is versioned, diffed and
shared like any prompt. It must have a response schema whose properties include
`score` (a number, 0..1) and `reason` (a string); its model's engine must implement
structured output (`response_format`), so the reply is constrained to the schema.
Its template may use `{{output}}`, `{{expected}}` and the row's variables; the run
renders it for every scored cell and runs it at batch priority like the cells
themselves. A reply that does not parse or validate scores 0 with the reason.

Custom evaluators: register a function by name

    from evals.evaluators import Score, register

    @register("starts_with_yes", version=1, doc="1 when the output starts with 'yes'.")
    def starts_with_yes(output, *, expected, variables, args):
        ok = output.strip().lower().startswith("yes")
        return Score(1.0 if ok else 0.0, ok, "" if ok else "does not start with yes")

in a module Django imports at start-up (an app's `apps.py` ready(), or a
module listed in settings.EVAL_EVALUATOR_MODULES). `check` validates the
arguments when a run is created, so a bad argument is a 400, not N failed cells.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
from collections.abc import Callable

from django.conf import settings

from core import patterns
from core.error_codes import DomainError
from playground.matching import Budget


@dataclasses.dataclass(frozen=True)
class Score:
    score: float
    passed: bool
    reason: str = ""

    def as_dict(self) -> dict:
        return {"score": round(float(self.score), 6), "passed": bool(self.passed), "reason": self.reason}


@dataclasses.dataclass(frozen=True)
class Evaluator:
    name: str
    version: int
    fn: Callable[..., Score]
    doc: str
    needs_expected: bool = False
    check: Callable[[dict], None] | None = None
    args: tuple[str, ...] = ()
    # "judge": scored by a generation the run makes (evals.runs), not by `fn`;
    # "tool_calls": `fn` gets the reply's parsed tool calls (a list, or None) as its output.
    kind: str = "function"


_REGISTRY: dict[str, Evaluator] = {}
NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def register(name: str, *, version: int = 1, doc: str = "", needs_expected: bool = False,
             check: Callable[[dict], None] | None = None, args: tuple[str, ...] = (), kind: str = "function"):
    """Register `fn(output, *, expected, variables, args) -> Score` under `name`."""
    if not NAME.fullmatch(name):
        raise ValueError(f"evaluator names are lowercase identifiers: {name!r}")

    def wrap(fn):
        _REGISTRY[name] = Evaluator(name=name, version=version, fn=fn, doc=doc or (fn.__doc__ or "").strip(),
                                    needs_expected=needs_expected, check=check, args=args, kind=kind)
        return fn
    return wrap


def evaluator_list() -> list[Evaluator]:
    _load_custom()
    return sorted(_REGISTRY.values(), key=lambda e: e.name)


def evaluator_get(name: str) -> Evaluator:
    _load_custom()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise DomainError(f"Unknown evaluator {name!r}; available: {', '.join(sorted(_REGISTRY))}.",
                          code="unknown_evaluator", field="evaluators") from None


_loaded = False


def _load_custom() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in getattr(settings, "EVAL_EVALUATOR_MODULES", ()):
            importlib.import_module(module)


def _bad_arg(name: str, message: str) -> DomainError:
    return DomainError(message, code="invalid_evaluator_args", field=f"evaluators.{name}")


def check_evaluators(specs) -> list[dict]:
    """Resolve a run's evaluator list ([name] or [{"name", "args"}]; [] scores
    nothing) into stored specs ({"name", "version", "args"}); unknown names and
    bad arguments are 400s."""
    if not isinstance(specs, list):
        raise DomainError("evaluators is a list (empty: outputs only, no scores).", code="invalid_type",
                          field="evaluators")
    if len(specs) > 20:
        raise DomainError("At most 20 evaluators per run.", code="too_many_evaluators", field="evaluators")
    out, seen = [], set()
    for spec in specs:
        if isinstance(spec, str):
            spec = {"name": spec}
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise DomainError("Each evaluator is a name or {\"name\", \"args\"}.", code="invalid_evaluator",
                              field="evaluators")
        unknown = set(spec) - {"name", "args", "as"}
        if unknown:
            raise DomainError(f"Unrecognized evaluator field: {sorted(unknown)[0]}.",
                              code="unknown_parameter",
                              field="evaluators")
        evaluator = evaluator_get(spec["name"])
        args = spec.get("args") or {}
        if not isinstance(args, dict):
            raise _bad_arg(evaluator.name, "args must be an object.")
        extra = set(args) - set(evaluator.args)
        if extra:
            raise _bad_arg(evaluator.name, f"{evaluator.name} takes no argument {sorted(extra)[0]!r} "
                                           f"(it takes: {', '.join(evaluator.args) or 'none'}).")
        if evaluator.check:
            evaluator.check(args)
        key = spec.get("as") or evaluator.name
        if not isinstance(key, str) or not NAME.fullmatch(key):
            raise _bad_arg(evaluator.name, "'as' must be a lowercase identifier.")
        if key in seen:
            raise _bad_arg(evaluator.name, f"Two evaluators are named {key!r}: give one an 'as'.")
        seen.add(key)
        out.append({"key": key, "name": evaluator.name, "version": evaluator.version, "args": args})
    return out


def score_output(specs: list[dict], *, output: str, expected: str | None, variables: dict,
                 tool_calls: list | None = None) -> dict:
    """Every evaluator's score of one output (key -> Score dict); `tool_calls`:
    the calls parsed from the reply (None: it made none). An evaluator that
    raises, or needs an expected output the row lacks, scores 0 with the reason."""
    scores = {}
    for spec in specs:
        evaluator = _REGISTRY.get(spec["name"])
        if evaluator is not None and evaluator.kind == "judge":
            continue  # the run scores it with a generation
        if evaluator is None:
            scores[spec["key"]] = Score(0.0, False, f"evaluator {spec['name']!r} is not registered").as_dict()
            continue
        if evaluator.needs_expected and expected is None and "value" not in spec["args"]:
            scores[spec["key"]] = Score(0.0, False, "the row has no expected output").as_dict()
            continue
        scored = tool_calls if evaluator.kind == "tool_calls" else output
        try:
            result = evaluator.fn(scored, expected=expected, variables=variables, args=spec["args"])
        except Exception as exc:  # a broken custom evaluator scores 0; the run goes on
            result = Score(0.0, False, f"evaluator error: {type(exc).__name__}: {exc}")
        scores[spec["key"]] = result.as_dict()
    return scores


def _flag(args: dict, name: str, default: bool) -> bool:
    value = args.get(name, default)
    return value if isinstance(value, bool) else default


def _check_bools(*names):
    def check(args):
        for name in names:
            if name in args and not isinstance(args[name], bool):
                raise DomainError(f"{name} must be a boolean.", code="invalid_evaluator_args",
                                  field=f"evaluators.{name}")
    return check


@register("exact", doc="1 when the output equals the expected output (stripped unless strip=false).",
          needs_expected=True, args=("strip", "case_sensitive"),
          check=_check_bools("strip", "case_sensitive"))
def exact(output, *, expected, variables, args):
    a, b = output, expected
    if _flag(args, "strip", True):
        a, b = a.strip(), b.strip()
    if not _flag(args, "case_sensitive", True):
        a, b = a.casefold(), b.casefold()
    ok = a == b
    return Score(1.0 if ok else 0.0, ok, "" if ok else "output differs from the expected output")


def _check_contains(args):
    _check_bools("case_sensitive")(args)
    if "value" in args and (not isinstance(args["value"], str) or not args["value"]):
        raise _bad_arg("contains", "value must be a non-empty string.")


@register("contains", doc="1 when the output contains `value` (default: the expected output).",
          needs_expected=True, args=("value", "case_sensitive"), check=_check_contains)
def contains(output, *, expected, variables, args):
    needle = args.get("value", expected)
    hay = output
    if not _flag(args, "case_sensitive", True):
        needle, hay = needle.casefold(), hay.casefold()
    ok = needle in hay
    return Score(1.0 if ok else 0.0, ok, "" if ok else f"output does not contain {needle[:80]!r}")


def _check_regex(args):
    _check_bools("full")(args)
    pattern = args.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise _bad_arg("regex", "regex needs a pattern (a non-empty string).")
    patterns.check_pattern(pattern, field="evaluators.regex.pattern")


@register("regex", version=2, doc="1 when `pattern` (RE2 syntax) matches the output (anywhere; the whole "
                                  "output with full=true).",
          args=("pattern", "full"), check=_check_regex)
def regex(output, *, expected, variables, args):
    ok = patterns.matches(args["pattern"], output, full=_flag(args, "full", False))
    return Score(1.0 if ok else 0.0, ok, "" if ok else "no match")


@register("json_valid", doc="1 when the output parses as JSON.")
def json_valid(output, *, expected, variables, args):
    try:
        json.loads(output)
    except ValueError as exc:
        return Score(0.0, False, f"not JSON: {exc}")
    return Score(1.0, True)


def _check_schema(args):
    schema = args.get("schema")
    if not isinstance(schema, dict):
        raise _bad_arg("json_schema", "json_schema needs a schema (a JSON Schema object).")
    patterns.check_schema(schema, field="evaluators.json_schema.schema",
                          invalid_code="invalid_evaluator_args")


@register("json_schema", version=2, doc="1 when the output parses as JSON and validates against `schema` "
                                        "(its patterns in RE2 syntax).",
          args=("schema",), check=_check_schema)
def json_schema(output, *, expected, variables, args):
    try:
        value = json.loads(output)
    except ValueError as exc:
        return Score(0.0, False, f"not JSON: {exc}")
    error = patterns.schema_error(args["schema"], value)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return Score(0.0, False, f"schema: {where}: {error.message}")
    return Score(1.0, True)


NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _check_numeric(args):
    for name in ("tolerance", "relative"):
        value = args.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise _bad_arg("numeric", f"{name} must be a number >= 0.")


@register("numeric", doc="1 when the first number in the output is within `tolerance` (absolute) or "
                         "`relative` (fraction) of the expected number.",
          needs_expected=True, args=("tolerance", "relative"), check=_check_numeric)
def numeric(output, *, expected, variables, args):
    want = NUMBER.search(expected or "")
    got = NUMBER.search(output)
    if want is None:
        return Score(0.0, False, "the expected output is not a number")
    if got is None:
        return Score(0.0, False, "no number in the output")
    a, b = float(got.group()), float(want.group())
    bound = max(float(args.get("tolerance", 0)), float(args.get("relative", 0)) * abs(b))
    ok = abs(a - b) <= bound
    return Score(1.0 if ok else 0.0, ok, "" if ok else f"{a:g} is not within {bound:g} of {b:g}")


def _check_similarity(args):
    value = args.get("threshold", 0.8)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise _bad_arg("similarity", "threshold must be a number from 0 to 1.")


@register("similarity", version=2, doc="The share (0..1) of output and expected that their longest common "
                                       "subsequence covers; passes at `threshold`.",
          needs_expected=True, args=("threshold",), check=_check_similarity)
def similarity(output, *, expected, variables, args):
    budget = Budget(settings.EVAL_SIMILARITY_TIMEOUT_S)
    ratio = budget.ratio(output.strip(), expected.strip())
    threshold = float(args.get("threshold", 0.8))
    ok = ratio >= threshold
    note = " (matching ran out of time, EVAL_SIMILARITY_TIMEOUT_S: a lower bound)" if budget.coarse else ""
    return Score(ratio, ok, "" if ok else f"similarity {ratio:.2f} < {threshold:g}{note}")


def _check_judge(args):
    for name in ("prompt", "version"):
        if not isinstance(args.get(name), str) or not args[name]:
            raise _bad_arg("judge", f"judge needs {name} (the judge prompt's {name} id).")
    value = args.get("threshold", 0.5)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise _bad_arg("judge", "threshold must be a number from 0 to 1.")


_REGISTRY["judge"] = Evaluator(
    name="judge", version=1, fn=lambda *a, **k: Score(0.0, False, "scored by the run"), kind="judge",
    doc="LLM-as-judge: a saved prompt version with a response schema {score, reason} scores each output.",
    check=_check_judge, args=("prompt", "version", "threshold"))


def judge_score(text: str, *, schema: dict, threshold: float) -> Score:
    """A judge's reply as a score: JSON valid against the judge's schema, `score` clamped to 0..1."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        return Score(0.0, False, f"the judge's reply is not JSON: {exc}")
    try:
        error = patterns.schema_error(schema, value)
    except patterns.PatternRefused as exc:  # a schema saved before its patterns were checked
        return Score(0.0, False, f"the judge's schema cannot be checked: {exc}")
    if error is not None:
        return Score(0.0, False, f"the judge's reply does not fit its schema: {error.message}")
    score = value.get("score") if isinstance(value, dict) else None
    if isinstance(score, bool) or not isinstance(score, int | float):
        return Score(0.0, False, "the judge's reply has no numeric score")
    score = min(1.0, max(0.0, float(score)))
    return Score(score, score >= threshold, str(value.get("reason", ""))[:2000])
