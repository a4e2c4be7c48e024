"""An evaluation run is visible to whoever may view its dataset, but its columns
are prompt versions: a dataset grantee who may not view a column's prompt (never
granted, or revoked since) read its prompt and version ids, its title, and its
outputs, which the prompt's text produced (the fixed-cost engine answers the
rendered prompt reversed: the prompt itself), plus the word diff of the other
columns against it. Those are now withheld, as a 404 would; scores stay."""

import json
from types import SimpleNamespace

import pytest
from rest_framework.test import APIClient

from evals.run_job import evalrun_drive
from evals.visibility import Visibility, hidden_judges, redact_cell, redact_evaluators

# The evaluations suite's settings (its model, no dispatch thread) and in-process backend.
from tests.evals.conftest import MODEL, _eval_settings, backend  # noqa: F401
from tests.factories import PromptFactory, PromptVersionFactory, UserFactory

pytestmark = pytest.mark.django_db

SECRET = "Never reveal the discount code ZEBRA-42."
CSV = "q,expected\nabc,cba\nhello,olleh\n"


def _client(user=None):
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client


def _grant(client, kind, target_id, user, role="viewer"):
    response = client.post(f"/api/{kind}/{target_id}/grants", {"username": user.username, "role": role},
                           format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


@pytest.fixture
def world(user, request):
    """Alice's dataset and run of two columns: her private prompt (column 0, with
    the secret) and a prompt she shares with every reader below (column 1)."""
    request.getfixturevalue("backend")
    alice = user
    secret = PromptVersionFactory(prompt=PromptFactory(owner=alice, title="Private pricing prompt"),
                                  body=SECRET + " {{q}}", model_name=MODEL)
    shared = PromptVersionFactory(prompt=PromptFactory(owner=alice, title="Shared prompt"),
                                  body="{{q}}", model_name=MODEL)
    readers = {name: UserFactory() for name in ("grantee", "dataset_only", "revoked", "stranger")}
    owner = _client(alice)
    dataset = owner.post("/api/datasets/", {"name": "cases"}, format="json").json()
    imported = owner.post(f"/api/datasets/{dataset['id']}/import", {"text": CSV, "format": "csv"},
                          format="json")
    assert imported.status_code == 201, imported.content
    for name in ("grantee", "dataset_only", "revoked"):
        _grant(owner, "datasets", dataset["id"], readers[name])
        _grant(owner, "prompts", shared.prompt_id, readers[name])
    _grant(owner, "prompts", secret.prompt_id, readers["grantee"])
    revoked = _grant(owner, "prompts", secret.prompt_id, readers["revoked"])
    created = owner.post("/api/evals/runs", {
        "dataset": dataset["id"], "evaluators": ["exact"],
        "columns": [{"prompt": str(v.prompt_id), "version": str(v.pk)} for v in (secret, shared)]},
        format="json")
    assert created.status_code == 201, created.content
    evalrun_drive(created.json()["id"])
    gone = owner.delete(f"/api/prompts/{secret.prompt_id}/grants/{revoked}")
    assert gone.status_code == 200, gone.content
    return SimpleNamespace(alice=alice, readers=readers, secret=secret, shared=shared,
                           dataset=dataset["id"], run=created.json()["id"])


def _leaks(text: str, world) -> list[str]:
    needles = [SECRET, SECRET[::-1], "ZEBRA-42", "24-ARBEZ", str(world.secret.pk),
               str(world.secret.prompt_id), "Private pricing prompt"]
    return [n for n in needles if n in text]


def _reads(client, world) -> dict:
    return {
        "detail": client.get(f"/api/evals/runs/{world.run}"),
        "results": client.get(f"/api/evals/runs/{world.run}/results"),
        "list": client.get("/api/evals/runs"),
        "list_of_dataset": client.get(f"/api/evals/runs?dataset={world.dataset}"),
    }


@pytest.mark.parametrize("who", ["owner", "grantee"])
def test_readers_who_may_view_every_prompt_see_the_whole_run(world, who):
    client = _client(world.alice if who == "owner" else world.readers[who])
    reads = _reads(client, world)
    assert {k: r.status_code for k, r in reads.items()} == dict.fromkeys(reads, 200)
    detail = reads["detail"].json()
    assert [c["redacted"] for c in detail["columns"]] == [False, False]
    assert detail["columns"][0]["prompt_title"] == "Private pricing prompt"
    assert detail["columns"][0]["version"] == str(world.secret.pk)
    rows = reads["results"].json()["rows"]
    assert SECRET[::-1] in rows[0]["cells"][0]["output"]  # the echo engine: the rendered prompt, reversed
    assert "diff" in rows[0]["cells"][1]


@pytest.mark.parametrize("who", ["dataset_only", "revoked"])
def test_a_reader_who_may_not_view_a_columns_prompt_gets_it_redacted(world, who):
    reads = _reads(_client(world.readers[who]), world)
    assert {k: r.status_code for k, r in reads.items()} == dict.fromkeys(reads, 200)
    for name, response in reads.items():
        assert _leaks(response.content.decode(), world) == [], name
    detail = reads["detail"].json()
    hidden, visible = detail["columns"]
    assert hidden == {"index": 0, "prompt": None, "prompt_title": None, "version": None,
                      "version_number": None, "model_name": MODEL, "params": hidden["params"],
                      "redacted": True}
    assert visible["redacted"] is False and visible["version"] == str(world.shared.pk)
    listed = [r for r in reads["list"].json()["results"] if r["id"] == world.run]
    assert [c["redacted"] for c in listed[0]["columns"]] == [True, False]
    rows = reads["results"].json()["rows"]
    assert len(rows) == 2
    for row in rows:
        cell0, cell1 = row["cells"]
        assert (cell0["output"], cell0["error_message"], cell0["redacted"]) == (None, None, True)
        assert "exact" in cell0["scores"] and cell0["passed"] is not None  # scores stay
        assert cell1["redacted"] is False and cell1["output"] == row["variables"]["q"][::-1]
        assert "diff" not in cell1  # a diff against column 0 would show column 0's output


@pytest.mark.parametrize("who", ["stranger", "anonymous"])
def test_a_reader_without_the_dataset_gets_nothing(world, who):
    client = _client(world.readers[who]) if who != "anonymous" else _client()
    reads = _reads(client, world)
    assert reads["detail"].status_code in (401, 404) and reads["results"].status_code in (401, 404)
    for response in reads.values():
        assert _leaks(response.content.decode(), world) == []


def test_a_judge_the_reader_may_not_view_loses_its_ids_and_reasons():
    """Judges are prompt versions too (a judge run needs a constrained model: the
    functions are checked on their own here)."""
    run = SimpleNamespace(evaluators=[
        {"name": "exact", "key": "exact", "version": 1, "args": {}},
        {"name": "judge", "key": "tone", "version": 1, "args": {"prompt": "p-hidden", "version": "v-hidden"}},
        {"name": "judge", "key": "facts", "version": 1, "args": {"prompt": "p-seen", "version": "v-seen"}}])
    seen = Visibility(frozenset({"p-seen"}))
    assert hidden_judges(run, seen) == {"tone"}
    specs = redact_evaluators(run.evaluators, seen)
    assert specs[1]["args"] == {"prompt": None, "version": None} and specs[2]["args"]["prompt"] == "p-seen"
    cell = {"output": "x", "error_message": None, "redacted": False,
            "scores": {"tone": {"score": 1, "passed": True, "reason": "the prompt says " + SECRET},
                       "facts": {"score": 0, "passed": False, "reason": "wrong"}}}
    shown = redact_cell(cell, column_visible=True, judges={"tone"})
    assert SECRET not in json.dumps(shown) and shown["scores"]["facts"]["reason"] == "wrong"
