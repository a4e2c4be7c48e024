"""Names checked with `^...$` and re.match let a trailing newline through ("production\n":
`$` also matches before a final newline). Every such check is a fullmatch: each API that
takes one of these values refuses the value with a trailing newline, with its usual code."""

import json
import uuid

import pytest
from rest_framework.test import APIClient

from inference_protocol import tools
from inference_protocol.checkpoints import ManifestError, check_name
from inference_protocol.validation import InvalidInput
from tests.factories import PromptFactory, PromptVersionFactory

pytestmark = [pytest.mark.django_db, pytest.mark.any_profile]


@pytest.fixture
def owner_client(user):
    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture
def version(user):
    return PromptVersionFactory(prompt=PromptFactory(owner=user), body="{{q}}")


def test_a_label_name_with_a_trailing_newline_is_refused(owner_client, version):
    response = owner_client.post(f"/api/prompts/{version.prompt_id}/labels/production%0A/move",
                                 {"version": str(version.pk), "expected": None}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid_label_name"
    assert not version.prompt.labels.exists()


def test_a_variable_name_with_a_trailing_newline_is_refused(owner_client, version):
    response = owner_client.post(f"/api/prompts/{version.prompt_id}/versions",
                                 {"model": "fixed-cost", "message": "edit", "parent": str(version.pk),
                                  "body": "{{q}}", "variables": {"q\n": None}}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid_variable_name"


def test_a_dataset_row_variable_with_a_trailing_newline_is_refused(owner_client):
    dataset = owner_client.post("/api/datasets/", {"name": "rows"}, format="json").json()
    line = json.dumps({"variables": {"q\n": "x"}, "expected": "x"})
    response = owner_client.post(f"/api/datasets/{dataset['id']}/import",
                                 {"text": line + "\n", "format": "jsonl", "dry_run": True}, format="json")
    assert response.status_code == 200, response.content
    assert [e["code"] for e in response.json()["errors"]] == ["invalid_variable_name"]


def test_an_evaluator_alias_with_a_trailing_newline_is_refused(owner_client, version):
    dataset = owner_client.post("/api/datasets/", {"name": "alias"}, format="json").json()
    imported = owner_client.post(f"/api/datasets/{dataset['id']}/import",
                                 {"text": "q,expected\nabc,cba\n", "format": "csv"}, format="json")
    assert imported.status_code == 201, imported.content
    response = owner_client.post("/api/evals/runs", {
        "dataset": dataset["id"], "evaluators": [{"name": "exact", "as": "ok\n"}],
        "columns": [{"prompt": str(version.prompt_id), "version": str(version.pk)}]}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid_evaluator_args"


@pytest.mark.django_db(transaction=True)  # the key is looked up on a thread of its own
def test_a_prompt_label_header_with_a_trailing_newline_is_refused(client, api_key):
    response = client.post("/v1/chat/completions",
                           {"model": "fixed-cost", "messages": [{"role": "user", "content": "hi"}]},
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {api_key[1]}",
                           HTTP_X_PROMPT_VERSION=str(uuid.uuid4()), HTTP_X_PROMPT_LABEL="production\n")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid_prompt_ref"


@pytest.mark.django_db(transaction=True)  # the key is looked up on a thread of its own
def test_a_tool_name_with_a_trailing_newline_is_refused(client, api_key):
    tool = {"type": "function", "function": {"name": "lookup\n", "parameters": {"type": "object"}}}
    response = client.post("/v1/chat/completions",
                           {"model": "fixed-cost", "messages": [{"role": "user", "content": "hi"}],
                            "tools": [tool]},
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {api_key[1]}")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["param"] == "tools[0].function.name"
    with pytest.raises(InvalidInput):
        tools.check_tools([tool])


def test_a_request_id_with_a_trailing_newline_is_replaced_not_echoed(owner_client):
    response = owner_client.get("/api/prompts/", HTTP_X_REQUEST_ID="req-1\n")
    assert response.status_code == 200
    assert response["X-Request-ID"] != "req-1\n" and "\n" not in response["X-Request-ID"]
    assert len(response["X-Request-ID"]) == 32  # a fresh uuid4 hex


@pytest.mark.parametrize("name", ["model\n", "v1\n"])
def test_a_checkpoint_name_with_a_trailing_newline_is_refused(name):
    with pytest.raises(ManifestError):
        check_name("model", name)
