"""The workbench's bad input, each refused at its field with a stable code and
nothing saved half-way: an invalid response schema, a tool without a name, a
parameter the model does not run, 200 turns, a 1 MB variable value."""

import json

import pytest

from playground.models import PromptVersion
from tests.playground.conftest import create_version

TOOL_WITHOUT_NAME = [{"type": "function", "function": {"parameters": {"type": "object"}}}]


@pytest.mark.parametrize(("fields", "status", "code", "field"), [
    ({"response_schema": {"type": "nonsense"}}, 400, None, "response_schema"),
    ({"tools": TOOL_WITHOUT_NAME}, 400, "invalid_type", "tools[0].function.name"),
    ({"messages": [{"role": "user", "content": "x"}] * 200}, 400, "too_many_messages", "messages"),
    ({"variables": {"big": "x" * (1024 * 1024)}}, 400, "body_too_large", "variables.big"),
    ({"tool_choice": "required"}, 400, "invalid_value", "tool_choice"),
    ({"seed": -1}, 400, None, "seed"),
])
def test_should_refuse_a_version_at_the_field_and_save_nothing(auth_client, prompt, fields, status, code,
                                                               field):
    answer = create_version(auth_client, prompt, body="Hi {{big}}", **fields)
    assert answer.status_code == status, answer.content
    error = answer.json()["error"]
    assert error["field"] == field and (code is None or error["code"] == code), error
    assert not PromptVersion.objects.filter(prompt=prompt).exists()


@pytest.mark.django_db(transaction=True)  # the run route is an async view: its own connection reads
def test_should_refuse_a_run_the_model_cannot_serve_or_too_large_to_send(auth_client, prompt):
    run = f"/api/prompts/{prompt.pk}/run"
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    unsupported = auth_client.post(run, {"body": "x", "model": "fixed-cost", "tools": tools}, format="json")
    assert unsupported.status_code == 400
    assert (unsupported.json()["error"]["code"], unsupported.json()["error"]["field"]) == \
        ("unsupported_parameter", "tools")
    big = json.dumps({"body": "{{v}}", "model": "fixed-cost", "variables": {"v": "x" * (1024 * 1024)}})
    too_large = auth_client.generic("POST", run, big, content_type="application/json")
    assert too_large.status_code in (400, 413), too_large.content
    assert too_large.json()["error"]["code"] == "request_too_large"
