import pytest

from playground.models import PromptVersion
from tests.factories import PromptFactory, PromptVersionFactory, UserFactory
from tests.playground.conftest import create_version

pytestmark = pytest.mark.django_db


def test_should_create_prompt_then_root_and_child_versions(auth_client):
    response = auth_client.post("/api/prompts/", {"title": "Greeter", "description": "says hi"},
                                format="json")
    assert response.status_code == 201
    prompt_id = response.json()["id"]
    root = auth_client.post(f"/api/prompts/{prompt_id}/versions",
                            {"body": "Hi {{name}}\n", "model": "smollm2", "temperature": 0.2,
                             "stop": ["\n\n"], "variables": {"name": None}, "message": "first"},
                            format="json")
    assert root.status_code == 201, root.json()
    root = root.json()
    assert root["parent"] is None and root["number"] == 1 and root["depth"] == 0
    assert root["body"] == "Hi {{name}}\n" and root["model"] == "smollm2"
    child = auth_client.post(f"/api/prompts/{prompt_id}/versions",
                             {"parent": root["id"], "body": "Hello {{name}}\n", "model": "smollm2"},
                             format="json").json()
    assert child["parent"] == root["id"] and child["depth"] == 1 and child["number"] == 2
    got = auth_client.get(f"/api/prompts/{prompt_id}/versions/{child['id']}").json()
    assert got["body"] == "Hello {{name}}\n" and got["author"] == root["author"]


def test_should_branch_when_two_edits_share_a_parent_and_report_heads_and_tree(auth_client, prompt):
    root = PromptVersionFactory(prompt=prompt, body="a\nb\n")
    left = PromptVersionFactory(prompt=prompt, parent=root, body="a\nB\n")
    right = PromptVersionFactory(prompt=prompt, parent=root, body="A\nb\n")
    tip = PromptVersionFactory(prompt=prompt, parent=left, body="a\nB\nc\n")
    heads = auth_client.get(f"/api/prompts/{prompt.pk}/heads").json()["results"]
    assert {h["id"] for h in heads} == {str(right.pk), str(tip.pk)}
    tree = {n["id"]: n for n in auth_client.get(f"/api/prompts/{prompt.pk}/tree").json()["results"]}
    assert tree[str(root.pk)]["children"] == [str(left.pk), str(right.pk)]
    assert tree[str(tip.pk)]["parent"] == str(left.pk) and tree[str(tip.pk)]["depth"] == 2
    assert tree[str(right.pk)]["children"] == []


def test_should_paginate_and_search_prompts(auth_client, user):
    for i in range(3):
        PromptFactory(owner=user, title=f"alpha {i}")
    PromptFactory(owner=user, title="beta")
    PromptFactory(title="alpha of someone else")
    page = auth_client.get("/api/prompts/?page_size=2&q=alpha").json()
    assert len(page["results"]) == 2 and page["next"]
    rest = auth_client.get(page["next"]).json()
    titles = {p["title"] for p in page["results"] + rest["results"]}
    assert titles == {"alpha 0", "alpha 1", "alpha 2"}


def test_should_paginate_versions(auth_client, prompt):
    parent = None
    for i in range(5):
        parent = PromptVersionFactory(prompt=prompt, parent=parent, body=f"v{i}\n")
    page = auth_client.get(f"/api/prompts/{prompt.pk}/versions?page_size=3").json()
    assert [v["number"] for v in page["results"]] == [1, 2, 3]
    assert [v["number"] for v in auth_client.get(page["next"]).json()["results"]] == [4, 5]


def test_stranger_gets_404_for_every_prompt_route(api_client, prompt):
    version = PromptVersionFactory(prompt=prompt)
    api_client.force_login(UserFactory())
    base = f"/api/prompts/{prompt.pk}"
    for url in (base, f"{base}/versions", f"{base}/versions/{version.pk}", f"{base}/tree",
                f"{base}/versions/{version.pk}/body", f"{base}/labels/production"):
        response = api_client.get(url)
        assert response.status_code == 404, url
        assert response.json()["error"]["code"] == "prompt_not_found"
    assert create_version(api_client, prompt, parent=str(version.pk), body="x").status_code == 404
    assert PromptVersion.objects.count() == 1


def test_should_publish_prompt_routes_in_openapi_schema(auth_client):
    schema = auth_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    for route in ("/api/prompts/", "/api/prompts/{prompt_id}/versions", "/api/prompts/{prompt_id}/diff",
                  "/api/prompts/{prompt_id}/labels/{name}/move", "/api/prompts/{prompt_id}/uploads",
                  "/api/prompts/{prompt_id}/tree"):
        assert route in paths, route
