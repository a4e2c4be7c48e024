"""The evaluations REST API end to end on the in-process worker: import (preview,
per-row errors), rows, export, runs, results, the gate on label moves, the
authorization matrix, the OpenAPI schema."""

import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounts.models import Membership
from accounts.services import team_create
from evals.models import EvalRun, GateDecision
from evals.run_job import evalrun_drive
from sharing.models import AuditEvent
from tests.evals.conftest import MODEL
from tests.factories import LabelFactory, PromptVersionFactory, UserFactory

CSV = "q,expected\nabc,cba\nhello,olleh\nbroken\nxyz,xyz\n"


def _client(user=None):
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client


def _dataset(client, name="reverse", csv=CSV):
    dataset = client.post("/api/datasets/", {"name": name}, format="json").json()
    upload = SimpleUploadedFile("cases.csv", csv.encode(), content_type="text/csv")
    response = client.post(f"/api/datasets/{dataset['id']}/import", {"file": upload, "skip_invalid": True},
                           format="multipart")
    assert response.status_code == 201, response.json()
    return dataset, response.json()["version"]


def _run(client, dataset_id, versions, evaluators=("exact",)):
    response = client.post(
        "/api/evals/runs",
        {
            "dataset": dataset_id,
            "evaluators": list(evaluators),
            "columns": [{"prompt": str(v.prompt_id), "version": str(v.pk)} for v in versions],
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    evalrun_drive(response.json()["id"])
    return client.get(f"/api/evals/runs/{response.json()['id']}").json()


def test_should_preview_an_import_then_run_two_versions_and_page_the_grid(user, echo_version, backend):
    client = _client(user)
    dataset = client.post("/api/datasets/", {"name": "reverse"}, format="json").json()
    preview = client.post(
        f"/api/datasets/{dataset['id']}/import",
        {"text": CSV, "format": "csv", "dry_run": True},
        format="json",
    )
    assert preview.status_code == 200
    body = preview.json()
    assert (body["valid"], body["version"]) == (3, None)
    assert body["errors"] == [
        {"line": 4, "code": "ragged_row", "field": "", "message": "The row has 1 fields; the header has 2."}
    ]
    refused = client.post(
        f"/api/datasets/{dataset['id']}/import", {"text": CSV, "format": "csv"}, format="json"
    )
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_rows"
    assert refused.json()["error"]["errors"][0]["line"] == 4
    imported = client.post(
        f"/api/datasets/{dataset['id']}/import",
        {"text": CSV, "format": "csv", "skip_invalid": True},
        format="json",
    )
    version = imported.json()["version"]
    assert (imported.status_code, version["number"], version["row_count"]) == (201, 1, 3)
    rows = client.get(f"/api/datasets/{dataset['id']}/versions/{version['id']}/rows?start=1&limit=1").json()
    assert [r["variables"] for r in rows["rows"]] == [{"q": "hello"}] and rows["next"] == 2
    export = client.get(f"/api/datasets/{dataset['id']}/versions/{version['id']}/export?as=csv")
    assert b"".join(export.streaming_content).decode().splitlines()[1] == "abc,cba,"

    bang = PromptVersionFactory(
        prompt=echo_version.prompt, parent=echo_version, body="{{q}} !", model_name=MODEL
    )
    run = _run(client, dataset["id"], [echo_version, bang])
    assert (run["status"], run["completed"], run["failed"]) == ("done", 6, 0)
    assert [c["version_number"] for c in run["columns"]] == [1, 2]
    first, second = run["summary"]["columns"]
    assert first["scores"]["exact"]["mean"] == pytest.approx(2 / 3) and second["scores"]["exact"]["mean"] == 0
    assert first["served"] == {MODEL: 3}  # which model@version served the column's cells

    page = client.get(f"/api/evals/runs/{run['id']}/results?limit=2").json()
    assert [r["row_index"] for r in page["rows"]] == [0, 1] and page["next"] == 2
    cells = page["rows"][0]["cells"]
    assert [c["output"] for c in cells] == ["cba", "! cba"]
    assert [c["served"] for c in cells] == [MODEL, MODEL]
    assert cells[1]["diff"] == [["+", "! "], ["=", "cba"]]
    disagree = client.get(f"/api/evals/runs/{run['id']}/results?filter=disagree").json()
    assert [r["row_index"] for r in disagree["rows"]] == [0, 1]  # xyz fails in both columns
    failed = client.get(f"/api/evals/runs/{run['id']}/results?filter=failed").json()
    assert [r["row_index"] for r in failed["rows"]] == [0, 1, 2]
    assert (
        client.get(f"/api/evals/runs/{run['id']}/results?filter=nope").json()["error"]["code"]
        == "invalid_request"
    )
    assert (
        client.get(f"/api/evals/runs/{run['id']}/results?colour=red").json()["error"]["code"]
        == "unknown_parameter"
    )
    assert client.post(f"/api/evals/runs/{run['id']}/cancel").status_code == 409
    names = [e["name"] for e in client.get("/api/evals/evaluators").json()]
    assert {"exact", "contains", "regex", "json_valid", "json_schema", "numeric", "similarity"} <= set(names)


def test_should_refuse_bad_dataset_input(user):
    client = _client(user)
    assert client.post("/api/datasets/", {"name": ""}, format="json").status_code == 400
    dataset = client.post("/api/datasets/", {"name": "d"}, format="json").json()
    url = f"/api/datasets/{dataset['id']}/import"
    cases = [
        ({"text": "q\n", "format": "csv"}, "dataset_empty"),
        ({"text": "a,b\n1,2\n"}, "invalid_format"),
        ({"text": "a,a\n1,2\n", "format": "csv"}, "invalid_csv_header"),
        ({}, "file_required"),
    ]
    for body, code in cases:
        response = client.post(url, body, format="json")
        assert (response.status_code, response.json()["error"]["code"]) == (400, code), body
    upload = SimpleUploadedFile("x.csv", b"q\n\xff\xfe\n")
    assert client.post(url, {"file": upload}, format="multipart").json()["error"]["code"] == "file_not_utf8"
    response = client.post(
        "/api/evals/runs", {"dataset": dataset["id"], "evaluators": ["exact"], "columns": [{}]}, format="json"
    )
    assert response.json()["error"]["code"] == "dataset_empty"


@pytest.mark.parametrize("row", [{"variables": {"q": "a\x00b"}}, {"expected": "\x00"},
                                 {"metadata": {"note": "x\x00"}}, {"metadata": {"k\x00": 1}}])
def test_should_refuse_a_row_with_a_nul_character_the_database_cannot_store(user, row):
    """PostgreSQL's jsonb stores no NUL: it used to be a 500 (found by the API fuzzer)."""
    response = _client(user).post("/api/datasets/", {"name": "nul", "rows": [row]}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "null_characters_not_allowed"


def test_should_gate_a_label_move_on_a_passing_run(user, echo_version, backend):
    client = _client(user)
    dataset, _ = _dataset(client)
    prompt = echo_version.prompt
    LabelFactory(version=echo_version, name="production")
    worse = PromptVersionFactory(prompt=prompt, parent=echo_version, body="{{q}}!", model_name=MODEL)
    same = PromptVersionFactory(prompt=prompt, parent=echo_version, body=" {{q}}", model_name=MODEL)
    base = f"/api/prompts/{prompt.pk}/labels/production"
    gate = client.put(
        f"{base}/gate", {"dataset": dataset["id"], "evaluator": "exact", "margin": 0.0}, format="json"
    )
    assert gate.status_code == 200 and gate.json()["dataset_name"] == "reverse"

    def move(version, run=None):
        query = f"?require_eval={run}" if run else ""
        return client.post(
            f"{base}/move{query}",
            {"version": str(version.pk), "expected": str(echo_version.pk)},
            format="json",
        )

    assert move(worse).json()["error"]["code"] == "eval_required"
    run = _run(client, dataset["id"], [echo_version, worse, same])
    refused = move(worse, run["id"])
    error = refused.json()["error"]
    assert (refused.status_code, error["code"]) == (409, "eval_regression")
    assert error["run_url"] == f"/evals/runs/{run['id']}/"
    assert error["figures"]["candidate"]["mean"] == 0 and error["figures"]["baseline"][
        "mean"
    ] == pytest.approx(2 / 3)
    assert client.get(f"{base}").json()["version"]["id"] == str(echo_version.pk)  # did not move

    unfinished = EvalRun.objects.create(owner=user, dataset_version_id=run["dataset_version"], evaluators=[])
    assert move(same, unfinished.pk).json()["error"]["code"] == "eval_not_finished"
    moved = move(same, run["id"])
    assert moved.status_code == 200 and moved.json()["version"] == str(same.pk)
    decisions = client.get(f"{base}/gate/decisions").json()["results"]
    assert [(d["code"], d["passed"]) for d in decisions] == [
        ("eval_passed", True),
        ("eval_not_finished", False),
        ("eval_regression", False),
        ("eval_required", False),
    ]
    assert decisions[2]["run_url"] == f"/evals/runs/{run['id']}/"
    assert GateDecision.objects.count() == 4


def _share(client, dataset_id, **grant):
    response = client.post(f"/api/datasets/{dataset_id}/grants", grant, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def test_authorization_matrix(user, echo_version, backend):
    """Datasets share as prompts do (the sharing module): owner, account grantee, team
    member, link holder (signed in, and anonymous), stranger, anonymous, revoked
    grantee, holder of a revoked link: one fixture set."""
    owner = user
    grantee, teammate, stranger, revoked, other = (UserFactory() for _ in range(5))
    team = team_create(owner=owner, name="evals crew")
    Membership.objects.create(team=team, user=teammate)
    client = _client(owner)
    dataset, version = _dataset(client)
    d, v = dataset["id"], version["id"]
    _share(client, d, username=grantee.username, role="viewer")
    _share(client, d, team=team.pk, role="editor")
    gone = _share(client, d, username=revoked.username, role="editor")
    assert client.delete(f"/api/datasets/{d}/grants/{gone['id']}").json()["revoked_at"] is not None
    link = client.post(f"/api/datasets/{d}/links", {"mode": "public"}, format="json").json()
    dead = client.post(f"/api/datasets/{d}/links", {"mode": "public"}, format="json").json()
    assert client.delete(f"/api/datasets/{d}/links/{dead['id']}").json()["state"] == "revoked"
    run = _run(client, d, [echo_version])
    r = run["id"]
    # Runs of their own need a prompt they can see: the grantee's and the teammate's own.
    def new_run(someone):
        own = PromptVersionFactory(prompt__owner=someone, body="{{q}}", model_name=MODEL)
        return {"dataset": d, "evaluators": ["exact"],
                "columns": [{"prompt": str(own.prompt_id), "version": str(own.pk)}]}
    calls = {
        "dataset": ("get", f"/api/datasets/{d}", None),
        "rows": ("get", f"/api/datasets/{d}/versions/{v}/rows", None),
        "export": ("get", f"/api/datasets/{d}/versions/{v}/export", None),
        "rename": ("patch", f"/api/datasets/{d}", {"name": "renamed"}),
        "import": ("post", f"/api/datasets/{d}/import", {"text": "q\nx\n", "format": "csv"}),
        "grant": ("post", f"/api/datasets/{d}/grants", {"username": other.username, "role": "viewer"}),
        "links": ("get", f"/api/datasets/{d}/links", None),
        "run": ("get", f"/api/evals/runs/{r}", None),
        "results": ("get", f"/api/evals/runs/{r}/results", None),
        "cancel": ("post", f"/api/evals/runs/{r}/cancel", None),
        "delete": ("delete", f"/api/datasets/{d}", None),
    }
    callers = {"owner": _client(owner), "grantee": _client(grantee), "teammate": _client(teammate),
               "link": _client(stranger), "anon link": _client(), "stranger": _client(stranger),
               "anonymous": _client(), "revoked": _client(revoked), "dead link": _client(stranger)}
    tokens = {"link": link["token"], "anon link": link["token"], "dead link": dead["token"]}
    expected = {  # owner, grantee, teammate, link, anon link, stranger, anonymous, revoked, dead link
        "dataset": (200, 200, 200, 200, 200, 404, 404, 404, 404),
        "rows": (200, 200, 200, 200, 200, 404, 404, 404, 404),
        "export": (200, 200, 200, 200, 200, 404, 404, 404, 404),
        "rename": (200, 403, 200, 403, 403, 404, 404, 404, 404),
        "import": (201, 403, 201, 403, 401, 404, 401, 404, 404),  # a link's role is read-only
        "grant": (201, 403, 403, 403, 401, 404, 401, 404, 404),
        "links": (200, 403, 403, 403, 401, 404, 401, 404, 404),
        "run": (200, 200, 200, 404, 401, 404, 401, 404, 404),  # links are for the rows, not runs
        "results": (200, 200, 200, 404, 401, 404, 401, 404, 404),
        "cancel": (409, 403, 403, 404, 401, 404, 401, 404, 404),
        "delete": (409, 403, 403, 403, 403, 404, 404, 404, 404),  # a run used it: refused
    }
    seen = {}
    for name, (method, url, body) in calls.items():
        seen[name] = tuple(
            getattr(c, method)(url, body, format="json",
                               **({"HTTP_X_SHARE_TOKEN": tokens[who]} if who in tokens else {})).status_code
            for who, c in callers.items())
    assert seen == expected
    made = {who: client.post("/api/evals/runs", new_run(u), format="json").status_code
            for who, client, u in [("grantee", callers["grantee"], grantee),
                                   ("teammate", callers["teammate"], teammate),
                                   ("revoked", callers["revoked"], revoked)]}
    assert made == {"grantee": 201, "teammate": 201, "revoked": 404}
    assert client.delete(f"/api/datasets/{d}").json()["error"]["code"] == "dataset_in_use"
    listed = {who: d in [x["id"] for x in callers[who].get("/api/datasets/").json()["results"]]
              for who in ("grantee", "teammate", "stranger", "revoked")}
    assert listed == {"grantee": True, "teammate": True, "stranger": False, "revoked": False}
    actions = list(AuditEvent.objects.filter(dataset_id=d).values_list("action", flat=True))
    assert sorted(actions) == sorted(["grant.create"] * 4 + ["grant.revoke", "link.create", "link.create",
                                                             "link.revoke"])


def test_a_dataset_link_page_shows_the_newest_rows_until_the_link_is_revoked(user):
    client = _client(user)
    dataset, _ = _dataset(client)
    link = client.post(f"/api/datasets/{dataset['id']}/links", {"mode": "public", "name": "review"},
                       format="json").json()
    assert link["url"].endswith(f"/s/{link['token']}")
    page = _client().get(f"/s/{link['token']}")  # signed out
    assert page.status_code == 200 and page["Cache-Control"] == "no-store"
    assert "hello" in page.content.decode() and "reverse" in page.content.decode()
    client.delete(f"/api/datasets/{dataset['id']}/links/{link['id']}")
    assert _client().get(f"/s/{link['token']}").status_code == 404
    pinned = client.post(f"/api/datasets/{dataset['id']}/links", {"version": str(uuid.uuid4())},
                         format="json")
    # Prompt links pin a version; a dataset link reaches them all.
    assert (pinned.status_code, pinned.json()["error"]["code"]) == (400, "unsupported_parameter")


def test_should_rename_and_delete_a_dataset_no_run_used(user):
    client = _client(user)
    dataset, _ = _dataset(client, name="scratch")
    renamed = client.patch(f"/api/datasets/{dataset['id']}", {"name": "  kept  "}, format="json").json()
    assert renamed["name"] == "kept"
    blank = client.patch(f"/api/datasets/{dataset['id']}", {"name": " "}, format="json")
    assert (blank.status_code, blank.json()["error"]["code"]) == (400, "invalid_name")
    unknown = client.patch(f"/api/datasets/{dataset['id']}", {"owner": "me"}, format="json")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (400, "unknown_parameter")
    assert client.delete(f"/api/datasets/{dataset['id']}").status_code == 204
    assert client.get(f"/api/datasets/{dataset['id']}").status_code == 404


def test_openapi_schema_lists_every_evaluation_endpoint(auth_client):
    paths = auth_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    for path in [
        "/api/datasets/",
        "/api/datasets/{dataset_id}/import",
        "/api/datasets/{dataset_id}/versions",
        "/api/datasets/{dataset_id}/versions/{version_id}/rows",
        "/api/evals/evaluators",
        "/api/evals/runs",
        "/api/evals/runs/{run_id}/results",
        "/api/evals/runs/{run_id}/cancel",
        "/api/prompts/{prompt_id}/labels/{name}/gate",
    ]:
        assert path in paths, path
    move = paths["/api/prompts/{prompt_id}/labels/{name}/move"]["post"]
    assert "require_eval" in [p["name"] for p in move["parameters"]]


def test_pages_answer_404_to_a_stranger_and_render_for_a_viewer(user, echo_version, backend):
    client = _client(user)
    dataset, _ = _dataset(client)
    run = _run(client, dataset["id"], [echo_version])
    stranger = _client(UserFactory())
    for url in (f"/evals/datasets/{dataset['id']}/", f"/evals/runs/{run['id']}/"):
        assert stranger.get(url).status_code == 404
        page = client.get(url)
        assert page.status_code == 200 and b'id="page-config"' in page.content
    home = client.get("/evals/")
    assert home.status_code == 200 and b"reverse" in home.content
    assert _client().get("/evals/").status_code == 302  # signed out: to the login page
    gates = client.get(f"/api/prompts/{echo_version.prompt_id}/gates")
    assert (gates.status_code, gates.json()) == (200, [])


def test_should_gate_a_split_and_refuse_bad_moves_before_deciding(user, echo_version, backend):
    client = _client(user)
    dataset, _ = _dataset(client)
    prompt = echo_version.prompt
    LabelFactory(version=echo_version, name="production")
    worse = PromptVersionFactory(prompt=prompt, parent=echo_version, body="{{q}}!", model_name=MODEL)
    base = f"/api/prompts/{prompt.pk}/labels/production"
    client.put(f"{base}/gate", {"dataset": dataset["id"], "evaluator": "exact"}, format="json")
    run = _run(client, dataset["id"], [echo_version, worse])
    split = {
        "expected": str(echo_version.pk),
        "variants": [
            {"version": str(echo_version.pk), "weight": 90},
            {"version": str(worse.pk), "weight": 10},
        ],
    }
    assert client.post(f"{base}/split", split, format="json").json()["error"]["code"] == "eval_required"
    refused = client.post(f"{base}/split?require_eval={run['id']}", split, format="json")
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "eval_regression")
    # A version of another prompt, a stale `expected`: the move's own errors, and nothing recorded.
    before = GateDecision.objects.count()
    other = PromptVersionFactory(model_name=MODEL)
    moved = client.post(
        f"{base}/move?require_eval={run['id']}",
        {"version": str(other.pk), "expected": str(echo_version.pk)},
        format="json",
    )
    assert (moved.status_code, moved.json()["error"]["code"]) == (404, "version_not_found")
    stale = client.post(
        f"{base}/move?require_eval={run['id']}",
        {"version": str(worse.pk), "expected": str(worse.pk)},
        format="json",
    )
    assert (stale.status_code, stale.json()["error"]["code"]) == (409, "label_conflict")
    assert GateDecision.objects.count() == before


def test_should_import_a_large_file_in_the_background_with_progress(user, settings):
    from evals.import_job import dataset_import_run

    settings.EVAL_IMPORT_BACKGROUND_BYTES = 1000
    client = _client(user)
    dataset = client.post("/api/datasets/", {"name": "big"}, format="json").json()
    text = "q,expected\n" + "".join(f"row {i},{i}\n" for i in range(5000))
    accepted = client.post(
        f"/api/datasets/{dataset['id']}/import", {"text": text, "format": "csv"}, format="json"
    )
    job = accepted.json()["import"]
    assert (accepted.status_code, job["status"], job["lines_total"]) == (202, "queued", 5002)
    assert dataset_import_run(job["id"]) == "done"
    done = client.get(job["url"]).json()
    assert (done["status"], done["lines_done"], done["valid"], done["version"]["row_count"]) == (
        "done",
        5002,
        5000,
        5000,
    )
    # Bad rows without skip_invalid: the import fails, naming them, and writes nothing.
    bad = client.post(
        f"/api/datasets/{dataset['id']}/import", {"text": text + "ragged\n", "format": "csv"}, format="json"
    ).json()["import"]
    assert dataset_import_run(bad["id"]) == "failed"
    failed = client.get(bad["url"]).json()
    assert failed["error"]["code"] == "invalid_rows" and failed["errors"][0]["code"] == "ragged_row"
    assert client.get(f"/api/datasets/{dataset['id']}").json()["version_count"] == 1
    assert _client(UserFactory()).get(job["url"]).status_code == 404
