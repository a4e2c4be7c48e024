"""Deeply nested JSON is a 400 with a stable code on every DRF route, not a
RecursionError (500). (/v1 is covered in tests/inference_client/test_api.py.)"""

import pytest

from core.jsonbody import JsonTooDeep, json_loads

TOO_DEEP = b"[" * 100_000 + b"]" * 100_000          # past the parser's recursion limit
DEEP = b'{"title": "t", "description": ' + b"[" * 900 + b"]" * 900 + b"}"   # parses, then walks


@pytest.mark.parametrize("body", [TOO_DEEP, DEEP], ids=["past-recursion-limit", "deep"])
@pytest.mark.parametrize("path", ["/api/prompts/", "/api/accounts/keys", "/api/chat/messages",
                                  "/api/accounts/teams"])
def test_should_refuse_deeply_nested_json_on_every_drf_route(auth_client, path, body):
    response = auth_client.post(path, body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert response.json()["error"]["code"] == "json_too_deep"


def test_should_refuse_deep_json_for_anonymous_callers_too(api_client):
    response = api_client.post("/api/accounts/signup", TOO_DEEP, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "json_too_deep"


def test_json_within_the_bound_parses(settings):
    settings.JSON_MAX_DEPTH = 3
    assert json_loads(b'{"a": [{"b": 1}]}') == {"a": [{"b": 1}]}
    with pytest.raises(JsonTooDeep):
        json_loads(b'{"a": [{"b": [1]}]}')
