"""The field-aware diff (playground.version_diff, playground.jsondiff) on
unsaved versions: no database, the real differ."""

import copy
import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playground.jsondiff import JsonLimits, json_diff
from playground.matching import Budget
from playground.models import PromptVersion
from playground.version_diff import version_diff


def _version(number, **fields):
    fields = {"model_name": "fixed-cost", "system": "", "messages": [], "variables": {}, "stop": [],
              "tools": [], "response_schema": None, **fields}
    return PromptVersion(number=number, **fields)


def _diff(old, new, budget=None):
    return json_diff(old, new, budget=budget or Budget(60.0), limits=JsonLimits(500, 100_000))


def _apply(doc, ops):
    """RFC 6902 add / remove / replace, in order."""
    doc = copy.deepcopy(doc)
    for op in ops:
        keys = [k.replace("~1", "/").replace("~0", "~") for k in op["path"].split("/")[1:]]
        if not keys:
            doc = op["value"]
            continue
        parent = doc
        for key in keys[:-1]:
            parent = parent[int(key) if isinstance(parent, list) else key]
        last = int(keys[-1]) if isinstance(parent, list) else keys[-1]
        if op["op"] == "remove":
            del parent[last]
        elif op["op"] == "add" and isinstance(parent, list):
            parent.insert(last, op["value"])
        else:
            parent[last] = op["value"]
    return doc


SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([1.0, 0.5, "a", "b", "~/"])
KEYS = st.sampled_from(["x", "y", "a/b", "~"])
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(KEYS, inner, max_size=3), max_leaves=12)


@given(JSON, JSON)
@settings(suppress_health_check=[HealthCheck.too_slow])  # a starved CI core draws slowly; the cases stand
def test_should_give_operations_that_patch_the_old_value_into_the_new(old, new):
    out = _diff(old, new)
    patched = _apply(old, out["ops"])
    assert json.dumps(patched, sort_keys=True) == json.dumps(new, sort_keys=True)
    assert out["changed"] == (json.dumps(old, sort_keys=True) != json.dumps(new, sort_keys=True))
    assert not out["truncated"]


def test_should_insert_one_tool_at_the_front_as_one_add_and_tell_true_from_one():
    tools = [{"type": "function", "function": {"name": f"t{i}"}} for i in range(5)]
    new_tool = {"type": "function", "function": {"name": "first"}}
    assert _diff(tools, [new_tool, *tools])["ops"] == [{"op": "add", "path": "/0", "value": new_tool}]
    assert _diff({"strict": True}, {"strict": 1})["ops"] == [
        {"op": "replace", "path": "/strict", "old": True, "value": 1}]
    assert _diff({"a/b": {"~k": 1}}, {"a/b": {}})["ops"] == [{"op": "remove", "path": "/a~1b/~0k", "old": 1}]


def test_should_bound_huge_and_deep_json_diffs():
    many = [{"name": f"tool{i}", "description": "x" * 200} for i in range(20_000)]  # ~4.5 MB of JSON
    renamed = [{**t, "name": t["name"] + "!"} for t in many]
    out = json_diff(many, renamed, budget=Budget(60.0), limits=JsonLimits(50, 100_000))
    assert len(out["ops"]) == 50 and out["truncated"] and out["changed"]
    # One small change in a huge document is one operation.
    edited = [*many[:10_000], {**many[10_000], "description": "y"}, *many[10_001:]]
    assert _diff(many, edited)["ops"] == [
        {"op": "replace", "path": "/10000/description", "old": "x" * 200, "value": "y"}]
    # A value larger than what is left is elided (its size said), never carried.
    out = json_diff(None, many, budget=Budget(60.0), limits=JsonLimits(50, 1000))
    assert out["ops"] == [{"op": "replace", "path": "", "old": None, "value_elided": len(json.dumps(many))}]
    assert out["truncated"]
    # Below max_depth a changed subtree is replaced whole.
    deep_a, deep_b = 1, 2
    for _ in range(40):
        deep_a, deep_b = {"k": deep_a}, {"k": deep_b}
    (op,) = json_diff(deep_a, deep_b, budget=Budget(60.0), limits=JsonLimits(50, 100_000), max_depth=8)["ops"]
    assert op["op"] == "replace" and op["path"] == "/k" * 8


def test_should_table_the_parameters_and_each_variable_default():
    old = _version(1, temperature=0.2, stop=["END"], variables={"city": "Oslo", "name": None})
    new = _version(2, model_name="other", temperature=0.2, max_tokens=64, tool_choice="required",
                   variables={"city": "Bergen", "day": "1"})
    rows = {row["field"]: row for row in version_diff(old, new, bodies=("b\n", "b\n"))["fields"]}
    assert rows["model"] == {"field": "model", "from": "fixed-cost", "to": "other", "changed": True}
    assert rows["temperature"]["changed"] is False and rows["max_tokens"]["to"] == 64
    assert rows["stop"] == {"field": "stop", "from": ["END"], "to": [], "changed": True}
    assert rows["tool_choice"] == {"field": "tool_choice", "from": None, "to": "required", "changed": True}
    assert rows["variables.city"] == {"field": "variables.city", "from": "Oslo", "to": "Bergen",
                                      "changed": True}
    assert rows["variables.name"] == {"field": "variables.name", "from": None, "changed": True}  # dropped
    assert rows["variables.day"] == {"field": "variables.day", "to": "1", "changed": True}  # declared


TURNS = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!\nHow can I help?\n"},
         {"role": "user", "content": "Weather?"}]


def test_should_align_messages_by_role_and_diff_each_text():
    old = _version(1, system="Be terse.", messages=TURNS)
    call = [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]
    answer = {"role": "assistant", "content": "Hello!\nHow may I help?\n", "tool_calls": call}
    new = _version(2, messages=[TURNS[0], {"role": "user", "content": "More"}, answer, TURNS[2]])
    messages = version_diff(old, new, bodies=("same\n", "same\nmore\n"))["messages"]
    summary = [(m["kind"], m["role"], m["status"], m["from_index"], m["to_index"]) for m in messages]
    assert summary == [("system", "system", "removed", 0, None), ("turn", "user", "same", 1, 0),
                       ("turn", "user", "added", None, 1), ("turn", "assistant", "changed", 2, 2),
                       ("turn", "user", "same", 3, 3), ("body", "user", "changed", 4, 4)]
    assert "-Be terse.\n" in messages[0]["diff"]
    assistant = messages[3]
    assert "-How can I help?\n+How may I help?\n" in assistant["diff"]
    assert assistant["diff"].startswith("--- v1 messages[2] assistant\n+++ v2 messages[2] assistant\n")
    assert assistant["other"]["ops"] == [{"op": "add", "path": "/tool_calls", "value": call}]
    assert messages[-1]["diff"].endswith(" same\n+more\n") and not messages[-1]["truncated"]


def test_a_turn_that_changes_role_is_removed_and_added():
    old = _version(1, messages=[{"role": "user", "content": "x"}])
    new = _version(2, messages=[{"role": "assistant", "content": "x"}])
    messages = version_diff(old, new, bodies=("b", "b"), mode="word")["messages"]
    assert [(m["role"], m["status"]) for m in messages] == [("user", "removed"), ("assistant", "added"),
                                                            ("user", "same")]
    assert messages[1]["diff"].endswith("{+x+}")


def _megabyte_bodies():
    lines = [f"Sentence number {i} says something about prompts.\n" for i in range(60_000)]  # ~3 MB
    old = "".join(lines)
    lines[30_000] = "Sentence number 30000 says something new about prompts.\n"
    return old, "".join(lines)


def test_should_diff_megabyte_bodies_in_linear_time_and_cut_at_the_allowance(settings):
    old, new = _megabyte_bodies()
    started = time.monotonic()
    out = version_diff(_version(1), _version(2), bodies=(old, new), budget=Budget(60.0))
    assert time.monotonic() - started < 10  # quadratic matching of 60,000 lines takes minutes
    (body,) = out["messages"]
    assert "+Sentence number 30000 says something new about prompts.\n" in body["diff"]
    assert len(body["diff"]) < 2000 and not out["coarse"]
    # Every line rewritten: the diff would be ~6 MB; it stops at a hunk boundary within the allowance.
    settings.PROMPT_DIFF_INLINE_MAX_CHARS = 10_000
    out = version_diff(_version(1, system="a"), _version(2, system="b"), bodies=(old, old.upper()))
    system, body = out["messages"]
    assert system["diff"].endswith("+b\n\\ No newline at end of file\n") and not system["truncated"]
    assert body["truncated"] and len(body["diff"]) + len(system["diff"]) <= 10_000
    assert body["diff"].startswith("--- v1 body\n+++ v2 body\n")


@pytest.mark.parametrize("mode", ["line", "word"])
def test_past_the_deadline_the_diff_is_coarse_but_correct(mode):
    old, new = _megabyte_bodies()
    out = version_diff(_version(1, tools=[{"a": 1}, {"b": 2}]), _version(2, tools=[{"a": 1}, {"b": 3}]),
                       bodies=(old, new), mode=mode, budget=Budget(0.0))
    assert out["coarse"]
    (body,) = out["messages"]
    assert "new about prompts." in body["diff"]
    # The tools' lists are matched as one changed block, still a patch that applies.
    assert _apply([{"a": 1}, {"b": 2}], out["tools"]["ops"]) == [{"a": 1}, {"b": 3}]


@pytest.mark.django_db
def test_the_api_answers_the_field_diff_and_names_bad_parameters(auth_client, prompt):
    from tests.factories import PromptFactory, PromptVersionFactory

    tool = {"type": "function", "function": {"name": "weather", "description": "Weather now"}}
    strict = {**tool, "function": {**tool["function"], "strict": True}}
    same = {"system": "Be terse.", "variables": {"city": "Oslo"}}
    old = PromptVersionFactory(prompt=prompt, body="Hi {{city}}\n", tools=[tool], messages=TURNS, **same)
    new = PromptVersionFactory(prompt=prompt, parent=old, body="Hi {{city}}!\n", temperature=0.3,
                               tools=[strict], messages=[*TURNS[:2], {"role": "user", "content": "Rain?"}],
                               **same)
    url = f"/api/prompts/{prompt.pk}/diff/fields?from={old.pk}&to={new.pk}"
    out = auth_client.get(url + "&mode=word").json()
    assert (out["from"]["number"], out["to"]["number"], out["mode"], out["coarse"]) == (1, 2, "word", False)
    changed = [row["field"] for row in out["fields"] if row["changed"]]
    assert changed == ["temperature"]
    assert [(m["kind"], m["status"]) for m in out["messages"]] == [
        ("system", "same"), ("turn", "same"), ("turn", "same"), ("turn", "changed"), ("body", "changed")]
    assert out["messages"][3]["diff"].endswith("\n[-Weather-]{+Rain+}?")
    assert out["messages"][-1]["diff"].endswith("@@ -1,1 +1,1 @@\nHi {{city}}{+!+}\n")
    assert out["tools"]["ops"] == [{"op": "add", "path": "/0/function/strict", "value": True}]
    assert out["response_schema"] == {"changed": False, "ops": [], "truncated": False}
    bad = auth_client.get(url + "&mode=chars")
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "mode"
    missing = auth_client.get(f"/api/prompts/{prompt.pk}/diff/fields?from={old.pk}")
    assert missing.status_code == 400 and missing.json()["error"]["field"] == "to"
    elsewhere = PromptVersionFactory(prompt=PromptFactory(owner=prompt.owner))
    other = auth_client.get(f"/api/prompts/{prompt.pk}/diff/fields?from={old.pk}&to={elsewhere.pk}")
    assert other.status_code == 404 and other.json()["error"]["code"] == "version_not_found"


def test_the_json_diffs_of_one_answer_share_their_limits(settings):
    settings.PROMPT_DIFF_JSON_MAX_OPS = 3

    def turns(first):
        return [{"role": "assistant", "content": "", "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
            for i in range(first, first + 5)]

    old = _version(1, tools=[{"a": 1}, {"b": 1}], messages=turns(0))
    new = _version(2, tools=[{"a": 2}, {"b": 2}], messages=turns(10))
    out = version_diff(old, new, bodies=("b", "b"))
    assert [op["path"] for op in out["tools"]["ops"]] == ["/0/a", "/1/b"] and not out["tools"]["truncated"]
    others = [m["other"] for m in out["messages"] if m["kind"] == "turn"]
    assert [op["path"] for op in others[0]["ops"]] == ["/tool_calls/0/id"]
    assert all(o["changed"] and o["truncated"] and not o["ops"] for o in others[1:])
