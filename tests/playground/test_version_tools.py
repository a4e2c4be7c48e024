"""Function tools in saved versions: created and read through the API, checked
by the checker /v1 applies to `tools` (inference_protocol.tools), immutable,
shown by the diff (part=tools), carried by merges and forks, sent by runs by
reference (playground.calls.builder) and refused by evaluation runs rather than ignored.
Exports: tests/export (the property test sends them from every snippet); the
SDK: tests/sdk/test_live.py; a live run by reference: tests/export/test_live_export.py."""

import pytest

from core.error_codes import DomainError
from playground.calls.builder import version_chat_body
from playground.models import PromptVersion
from tests.factories import PromptVersionFactory
from tests.playground.conftest import create_version

pytestmark = pytest.mark.django_db

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather now, by city",
                                           "parameters": WEATHER, "strict": True}}]


def test_should_save_tools_as_given_and_read_them_back(auth_client, prompt):
    created = create_version(auth_client, prompt, body="Weather in {{city}}?", tools=TOOLS)
    assert created.status_code == 201, created.json()
    assert created.json()["tools"] == TOOLS
    got = auth_client.get(f"/api/prompts/{prompt.pk}/versions/{created.json()['id']}").json()
    assert got["tools"] == TOOLS
    listed = auth_client.get(f"/api/prompts/{prompt.pk}/versions").json()["results"]
    assert listed[0]["tools"] == TOOLS
    plain = create_version(auth_client, prompt, parent=created.json()["id"], body="no tools")
    assert plain.json()["tools"] == []  # tools are not inherited: each version says what it holds
    with pytest.raises(Exception, match="immutable"):
        PromptVersion.objects.filter(pk=created.json()["id"]).update(tools=[])


@pytest.mark.parametrize(("tools", "field", "code"), [
    ({"type": "function"}, "tools", "invalid_type"),
    ([{"type": "retrieval"}], "tools[0]", "invalid_type"),
    ([{"type": "function", "function": {"name": "bad name"}}], "tools[0].function.name", "invalid_type"),
    ([{"type": "function", "function": {"name": "f", "parameters": {"type": "array"}}}],
     "tools[0].function.parameters", "invalid_type"),
    ([{"type": "function", "function": {"name": "f", "extra": 1}}], "tools[0].function.extra",
     "invalid_value"),
    ([TOOLS[0], TOOLS[0]], "tools[1].function.name", "invalid_value"),
    ([{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"type": "string", "pattern": "(?<=a)b"}}}}}],
     "tools[0].function.parameters", "unsupported_schema"),
])
def test_should_refuse_tools_that_v1_refuses_naming_the_field(auth_client, prompt, tools, field, code):
    response = create_version(auth_client, prompt, body="x", tools=tools)
    assert response.status_code == 400, response.json()
    assert (response.json()["error"]["field"], response.json()["error"]["code"]) == (field, code)
    assert PromptVersion.objects.count() == 0


def test_should_refuse_tools_beside_a_response_schema(auth_client, prompt):
    response = create_version(auth_client, prompt, body="x", tools=TOOLS, response_schema=WEATHER)
    assert response.status_code == 400
    assert (response.json()["error"]["field"], response.json()["error"]["code"]) == (
        "tools", "unsupported_parameter")


def test_should_diff_the_tools_of_two_versions(auth_client, prompt):
    old = PromptVersionFactory(prompt=prompt, body="same\n", tools=TOOLS)
    changed = [{**TOOLS[0], "function": {**TOOLS[0]["function"], "description": "Weather tomorrow"}}]
    new = PromptVersionFactory(prompt=prompt, parent=old, body="same\n", tools=changed)
    base = f"/api/prompts/{prompt.pk}/diff?from={old.pk}&to={new.pk}"
    lines = b"".join(auth_client.get(base + "&part=tools").streaming_content).decode()
    assert lines.startswith(f"--- v{old.number} tools\n+++ v{new.number} tools\n")
    # (PostgreSQL's jsonb keeps its own key order: no trailing comma is assumed.)
    assert '\n-      "description": "Weather now, by city"' in lines
    assert '\n+      "description": "Weather tomorrow"' in lines
    words = b"".join(auth_client.get(base + "&part=tools&mode=word").streaming_content).decode()
    assert "[-now, by city-]{+tomorrow+}" in words
    body = b"".join(auth_client.get(base).streaming_content).decode()
    assert "@@" not in body  # the body did not change
    assert auth_client.get(base + "&part=nope").json()["error"]["field"] == "part"


def test_should_merge_tools_three_way_and_carry_them_into_forks(auth_client, prompt, user):
    root = PromptVersionFactory(prompt=prompt, body="a\n")
    ours = PromptVersionFactory(prompt=prompt, parent=root, body="a\nours\n")
    theirs = PromptVersionFactory(prompt=prompt, parent=root, body="theirs\na\n", tools=TOOLS)
    preview = auth_client.post(f"/api/prompts/{prompt.pk}/merge",
                               {"ours": str(ours.pk), "theirs": str(theirs.pk)}, format="json").json()
    assert (preview["tools"], preview["tools_differing"]) == (TOOLS, False)  # only theirs changed them

    from playground.ownership import prompt_fork

    fork = prompt_fork(source=prompt, version_id=theirs.pk, owner=user)
    assert fork.versions.get().tools == TOOLS


def test_should_send_the_tools_on_every_run_and_refuse_them_in_evaluations(prompt, user):
    version = PromptVersionFactory(prompt=prompt, body="Weather in {{city}}?", tools=TOOLS,
                                   model_name="smollm2")
    body = version_chat_body(version=version, variables={"city": "Oslo"})
    assert body["tools"] == TOOLS and body["messages"][-1]["content"] == "Weather in Oslo?"

    from evals.runs import _check_columns

    # An evaluation runs them on a model whose engine does (llama.cpp), never on one that does not.
    (column,) = _check_columns(user, [{"prompt": str(prompt.pk), "version": str(version.pk)}])
    assert column["params"]["tools"] == TOOLS
    with pytest.raises(DomainError) as refused:
        _check_columns(user, [{"prompt": str(prompt.pk), "version": str(version.pk), "model": "fixed-cost"}])
    assert refused.value.code == "unsupported_parameter"
