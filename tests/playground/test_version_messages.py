"""Versions with turns of every role between the system text and the body
(PromptVersion.messages) and a seed: saved, refused at the field when
malformed (nothing saved), rendered in order, compared with their parent, and
carried by export files and merges."""

import pytest

from playground.models import PromptVersion
from tests.playground.conftest import create_version

TURNS = [
    {"role": "user", "content": "Example: {{city}}"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"q\": 1}"}}]},
    {"role": "tool", "content": "Sunny in {{city}}", "tool_call_id": "call_1"},
    {"role": "assistant", "content": "It is sunny."},
]


def test_should_save_and_render_the_turns_in_order(auth_client, prompt):
    created = create_version(auth_client, prompt, system="Be {{tone}}.", body="Now {{city}} again",
                             messages=TURNS, seed=7, variables={"tone": "brief"})
    assert created.status_code == 201, created.content
    data = created.json()
    assert data["messages"] == TURNS and data["seed"] == 7
    rendered = auth_client.post(f"/api/prompts/{prompt.pk}/versions/{data['id']}/render",
                                {"variables": {"city": "Oslo"}}, format="json").json()
    assert rendered["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Example: Oslo"}, TURNS[1],
        {"role": "tool", "content": "Sunny in Oslo", "tool_call_id": "call_1"},
        {"role": "assistant", "content": "It is sunny."},
        {"role": "user", "content": "Now Oslo again"}]
    assert set(rendered) == {"system", "body", "messages"}


def test_should_name_a_variable_used_only_in_a_turn_as_missing(auth_client, prompt):
    data = create_version(auth_client, prompt, body="hi", messages=[TURNS[0]]).json()
    answer = auth_client.post(f"/api/prompts/{prompt.pk}/versions/{data['id']}/render", {}, format="json")
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "missing_variables" and "city" in error["message"]


@pytest.mark.parametrize(("messages", "field", "code"), [
    ("not a list", "messages", "invalid_type"),
    ([{"role": "robot", "content": "x"}], "messages[0].role", "invalid_value"),
    ([{"role": "user"}], "messages[0].content", "invalid_type"),
    ([{"role": "user", "content": "x", "tool_call_id": "c"}], "messages[0].tool_call_id",
     "unknown_parameter"),
    ([{"role": "tool", "content": "x"}], "messages[0].tool_call_id", "missing_required_parameter"),
    ([{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f"}}]}],
     "messages[0].tool_calls[0]", "invalid_type"),
    ([{"role": "user", "content": "x"}] * 101, "messages", "too_many_messages"),
])
def test_should_refuse_a_malformed_turn_at_its_field_and_save_nothing(auth_client, prompt, messages, field,
                                                                      code):
    answer = create_version(auth_client, prompt, body="hi", messages=messages)
    assert answer.status_code == 400, answer.content
    assert (answer.json()["error"]["code"], answer.json()["error"]["field"]) == (code, field)
    assert not PromptVersion.objects.filter(prompt=prompt).exists()


def test_should_count_a_change_of_turns_or_seed_as_a_change(auth_client, prompt):
    first = create_version(auth_client, prompt, body="hi", messages=TURNS[:1]).json()
    same = create_version(auth_client, prompt, body="hi", messages=TURNS[:1], parent=first["id"])
    assert same.status_code == 409 and same.json()["error"]["code"] == "version_unchanged"
    moved = create_version(auth_client, prompt, body="hi", messages=TURNS[:1] + TURNS[3:], parent=first["id"])
    assert moved.status_code == 201
    seeded = create_version(auth_client, prompt, body="hi", messages=TURNS[:1] + TURNS[3:], seed=1,
                            parent=moved.json()["id"])
    assert seeded.status_code == 201


def test_should_carry_turns_and_seed_through_a_history_export_and_import(auth_client, prompt):
    create_version(auth_client, prompt, body="hi {{city}}", messages=TURNS, seed=3)
    exported = auth_client.get(f"/api/prompts/{prompt.pk}/history-export").json()
    assert exported["versions"][0]["messages"] == TURNS and exported["versions"][0]["seed"] == 3
    imported = auth_client.post("/api/prompts/import", exported, format="json")
    assert imported.status_code == 201, imported.content
    copy = PromptVersion.objects.get(prompt_id=imported.json()["id"])
    assert (copy.messages, copy.seed) == (TURNS, 3)
    # A file written before versions had turns (no messages, no seed) still imports.
    for v in exported["versions"]:
        del v["messages"], v["seed"]
    older = auth_client.post("/api/prompts/import", exported, format="json")
    assert older.status_code == 201, older.content
    assert PromptVersion.objects.get(prompt_id=older.json()["id"]).messages == []
