"""Evaluators: each built-in on a pass and a fail, argument checks, a custom one."""

import pytest

from core.error_codes import DomainError
from evals import evaluators as ev

pytestmark = pytest.mark.any_profile


def _score(name, output, expected=None, **args):
    spec = ev.check_evaluators([{"name": name, "args": args}])
    return ev.score_output(spec, output=output, expected=expected, variables={})[name]


@pytest.mark.parametrize("name, output, expected, args, passed", [
    ("exact", " Paris\n", "Paris", {}, True),
    ("exact", "paris", "Paris", {}, False),
    ("exact", "paris", "Paris", {"case_sensitive": False}, True),
    ("contains", "The capital is Paris.", "Paris", {}, True),
    ("contains", "The capital is Lyon.", None, {"value": "Paris"}, False),
    ("regex", "order #1234 shipped", None, {"pattern": r"#\d{4}\b"}, True),
    ("regex", "order #1234 shipped", None, {"pattern": r"#\d{4}", "full": True}, False),
    ("json_valid", '{"a": [1, 2]}', None, {}, True),
    ("json_valid", "{'a': 1}", None, {}, False),
    ("json_schema", '{"name": "x", "age": 3}', None,
     {"schema": {"type": "object", "required": ["name"], "properties": {"age": {"type": "integer"}}}}, True),
    ("json_schema", '{"age": "3"}', None,
     {"schema": {"type": "object", "properties": {"age": {"type": "integer"}}}}, False),
    ("numeric", "About 3.14159 I think", "3.14", {"tolerance": 0.01}, True),
    ("numeric", "It is 120", "100", {"relative": 0.1}, False),
    ("similarity", "the quick brown fox", "the quick brown fix", {}, True),
    ("similarity", "completely different", "the quick brown fox", {}, False),
])
def test_should_score_each_builtin(name, output, expected, args, passed):
    score = _score(name, output, expected, **args)
    assert score["passed"] is passed
    assert (score["score"] > 0) if name == "similarity" else score["score"] == (1.0 if passed else 0.0)


def test_should_explain_a_schema_failure_and_a_missing_expected_output():
    score = _score("json_schema", '{"age": "3"}', schema={"properties": {"age": {"type": "integer"}}})
    assert "age" in score["reason"] and "integer" in score["reason"]
    assert _score("exact", "x", None) == {"score": 0.0, "passed": False,
                                         "reason": "the row has no expected output"}


@pytest.mark.parametrize("spec, code", [
    ("exact", "invalid_type"),
    ([{"name": "tool_calls", "args": {"arguments": "loose"}}], "invalid_evaluator_args"),
    (["nope"], "unknown_evaluator"),
    ([{"name": "regex"}], "invalid_evaluator_args"),
    ([{"name": "regex", "args": {"pattern": "("}}], "unsupported_pattern"),
    ([{"name": "json_schema", "args": {"schema": {"type": 5}}}], "invalid_evaluator_args"),
    ([{"name": "exact", "args": {"tolerance": 1}}], "invalid_evaluator_args"),
    ([{"name": "numeric", "args": {"tolerance": -1}}], "invalid_evaluator_args"),
    (["exact", "exact"], "invalid_evaluator_args"),
    ([{"name": "exact", "weight": 2}], "unknown_parameter"),
])
def test_should_refuse_bad_evaluator_specs(spec, code):
    with pytest.raises(DomainError) as exc:
        ev.check_evaluators(spec)
    assert exc.value.code == code and exc.value.status == 400


def test_should_run_a_registered_custom_evaluator_and_survive_one_that_raises():
    @ev.register("starts_with_yes", version=3, doc="1 when the output starts with yes.")
    def starts_with_yes(output, *, expected, variables, args):
        ok = output.lower().startswith("yes")
        return ev.Score(1.0 if ok else 0.0, ok)

    @ev.register("broken")
    def broken(output, *, expected, variables, args):
        raise RuntimeError("boom")

    try:
        _check_custom()
    finally:
        ev._REGISTRY.pop("starts_with_yes")
        ev._REGISTRY.pop("broken")


def _check_custom():
    specs = ev.check_evaluators(["starts_with_yes", {"name": "broken", "as": "b"}])
    assert specs[0] == {"key": "starts_with_yes", "name": "starts_with_yes", "version": 3, "args": {}}
    scores = ev.score_output(specs, output="Yes, sure", expected=None, variables={})
    assert scores["starts_with_yes"]["passed"] is True
    assert scores["b"] == {"score": 0.0, "passed": False, "reason": "evaluator error: RuntimeError: boom"}
    assert "starts_with_yes" in [e.name for e in ev.evaluator_list()]
