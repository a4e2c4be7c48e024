"""The scratch playground: a signed-in user's draft kept on the server, its
runs seen by that user alone, and "Save as prompt" making a prompt and its
first version in one step (or neither)."""

import uuid

import pytest
from rest_framework.test import APIClient

from playground.models import PlaygroundRun, Prompt, ScratchDraft
from playground.runs import run_build, run_record
from tests.factories import UserFactory

DRAFT = "/api/playground/draft"


def _client(user=None):
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client


def _scratch_run(user, output="olleh"):
    return run_record(run_id=uuid.uuid4(), prompt=None, user=user, version=None,
                      draft={"system": "", "messages": [], "body": "hello"}, variables={},
                      params={"model": "fixed-cost"}, output=output, tool_calls=None, status="ok")


def test_should_keep_each_users_draft_apart(db):
    alice, bob = UserFactory(), UserFactory()
    assert _client(alice).get(DRAFT).json() == {"state": {}, "updated_at": None}
    put = _client(alice).put(DRAFT, {"state": {"body": "Hi {{name}}", "turns": []}}, format="json")
    assert put.status_code == 200 and put.json()["state"]["body"] == "Hi {{name}}"
    assert _client(alice).get(DRAFT).json()["state"] == {"body": "Hi {{name}}", "turns": []}
    assert _client(bob).get(DRAFT).json()["state"] == {}
    assert _client().get(DRAFT).status_code in (401, 403)


def test_should_keep_a_draft_with_nul_and_lone_surrogates_as_near_as_the_database_holds(db):
    # The fuzzer's case: jsonb holds neither, and autosave must not fail (it was a 500).
    user = UserFactory()
    raw = '{"state": {"body": "a\\u0000b", "x\\ud800": ["\\udfff"]}}'
    put = _client(user).generic("PUT", DRAFT, raw, content_type="application/json")
    assert put.status_code == 200
    assert ScratchDraft.objects.get(user=user).state == {"body": "ab", "x\ufffd": ["\ufffd"]}


def test_should_refuse_an_oversize_draft_and_keep_the_last_one(db, settings):
    settings.PLAYGROUND_SCRATCH_MAX_BYTES = 100
    user = UserFactory()
    _client(user).put(DRAFT, {"state": {"body": "kept"}}, format="json")
    answer = _client(user).put(DRAFT, {"state": {"body": "x" * 200}}, format="json")
    assert answer.status_code == 400
    assert (answer.json()["error"]["code"], answer.json()["error"]["field"]) == ("body_too_large", "state")
    assert ScratchDraft.objects.get(user=user).state == {"body": "kept"}


def test_should_save_the_draft_as_a_prompt_with_its_first_version(db):
    user = UserFactory()
    client = _client(user)
    client.put(DRAFT, {"state": {"body": "x"}}, format="json")
    answer = client.post("/api/playground/save", {"title": "Greeter", "version": {
        "model": "fixed-cost", "system": "Be brief.", "body": "Hi {{name}}", "seed": 4,
        "messages": [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!"}],
        "message": "from scratch"}}, format="json")
    assert answer.status_code == 201, answer.content
    prompt = Prompt.objects.get(pk=answer.json()["prompt"]["id"])
    version = prompt.versions.get()
    assert (prompt.owner, prompt.title, version.number, version.seed, len(version.messages)) == \
        (user, "Greeter", 1, 4, 2)
    assert answer.json()["version"]["id"] == str(version.pk)
    assert not ScratchDraft.objects.filter(user=user).exists()


@pytest.mark.parametrize(("payload", "field", "code"), [
    ({"title": "T", "version": {"body": "   "}}, "version.body", "empty_body"),
    ({"title": "T", "version": {"body": "x", "messages": [{"role": "bot", "content": ""}]}},
     "messages[0].role", "invalid_value"),
    ({"title": "T", "version": {"body": "x", "parent": str(uuid.uuid4())}}, "version.parent",
     "unknown_parameter"),
    ({"title": "  ", "version": {"body": "x"}}, "title", "blank"),
])
def test_should_create_nothing_when_the_first_version_is_refused(db, payload, field, code):
    user = UserFactory()
    _client(user).put(DRAFT, {"state": {"body": "kept"}}, format="json")
    answer = _client(user).post("/api/playground/save", payload, format="json")
    assert answer.status_code == 400, answer.content
    assert (answer.json()["error"]["code"], answer.json()["error"]["field"]) == (code, field)
    assert not Prompt.objects.filter(owner=user).exists()
    assert ScratchDraft.objects.get(user=user).state == {"body": "kept"}


def test_should_show_scratch_runs_to_their_author_alone(db):
    alice, bob = UserFactory(), UserFactory()
    run = _scratch_run(alice)
    _scratch_run(bob, output="bob's")
    listed = _client(alice).get("/api/playground/runs").json()["results"]
    assert [r["id"] for r in listed] == [str(run.pk)] and listed[0]["prompt"] is None
    assert _client(alice).get(f"/api/runs/{run.pk}").json()["draft"]["body"] == "hello"
    for client in (_client(bob), _client()):
        answer = client.get(f"/api/runs/{run.pk}")
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "run_not_found"
    # The permalink opens the author's scratch playground on the run.
    page = _client(alice).get(f"/runs/{run.pk}/")
    assert page.status_code == 302 and page["Location"] == f"/playground/?run={run.pk}"
    assert _client(bob).get(f"/runs/{run.pk}/").status_code == 404
    assert _client(bob).delete(f"/api/runs/{run.pk}").status_code == 404
    assert _client(alice).delete(f"/api/runs/{run.pk}").status_code == 204
    assert not PlaygroundRun.objects.filter(pk=run.pk).exists()


def test_should_serve_the_scratch_page_with_the_model_cards(db):
    user = UserFactory()
    page = _client(user).get("/playground/")
    assert page.status_code == 200
    config = page.context["config"]
    assert config["prompt"] is None and config["runUrl"] == "/api/playground/run"
    card = next(c for c in config["catalog"] if c["id"] == "fixed-cost")
    assert {p["name"] for p in card["parameters"]} == {"temperature", "top_p", "max_tokens", "stop", "seed"}
    assert _client().get("/playground/").status_code == 302  # sign in first


def test_should_build_a_scratch_run_with_its_turns_rendered_in_order(db):
    built = run_build(user=UserFactory(), prompt_id=None, data={
        "system": "Be {{tone}}.", "body": "Bye {{name}}", "variables": {"tone": "kind", "name": "Ada"},
        "messages": [{"role": "user", "content": "Hi {{name}}"}, {"role": "assistant", "content": "Hello"}],
        "model": "fixed-cost", "seed": 3})
    assert built.prompt is None and built.version is None
    assert built.chat_body == {"model": "fixed-cost", "seed": 3, "messages": [
        {"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi Ada"},
        {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye Ada"}]}
