"""What the dataset page's grid and run form use: pasted spreadsheet rows (TSV,
per-row errors, the rest saved), runs with no evaluator, deleting runs (the
authorization matrix), versions with tools and the tool_calls evaluator."""

import json

import pytest
from rest_framework.test import APIClient

from evals import evaluators as ev
from evals.models import EvalResult, EvalRun
from evals.run_job import _Column, _scored, evalrun_drive
from tests.evals.conftest import MODEL
from tests.factories import PromptVersionFactory, UserFactory

TSV = "q\texpected\nabc\tcba\nthree\tcells\there\nhello\tolleh\n"


def _client(user=None):
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client


def _dataset(client, rows=({"variables": {"q": "xyz"}, "expected": "zyx"},)):
    response = client.post("/api/datasets/", {"name": "reverse", "rows": list(rows)}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def test_should_save_pasted_rows_as_a_new_version_and_report_the_ragged_one(user):
    client = _client(user)
    dataset = _dataset(client)
    url = f"/api/datasets/{dataset['id']}/import"
    body = {"text": TSV, "format": "tsv", "base": dataset["latest_version"], "message": "pasted"}
    refused = client.post(url, body, format="json")  # without skip_invalid nothing is written
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_rows"
    response = client.post(url, {**body, "skip_invalid": True}, format="json")
    assert response.status_code == 201, response.json()
    data = response.json()
    assert data["errors"] == [{"line": 3, "code": "ragged_row", "field": "",
                               "message": "The row has 3 fields; the header has 2."}]
    assert (data["version"]["number"], data["version"]["row_count"]) == (2, 3)
    rows = client.get(f"/api/datasets/{dataset['id']}/versions/{data['version']['id']}/rows").json()["rows"]
    assert [(r["variables"], r["expected"]) for r in rows] == [
        ({"q": "xyz"}, "zyx"), ({"q": "abc"}, "cba"), ({"q": "hello"}, "olleh")]


def test_should_edit_add_and_delete_rows_in_one_new_version(user):
    client = _client(user)
    dataset = _dataset(client, rows=[{"variables": {"q": "a"}, "expected": "a"},
                                     {"variables": {"q": "b"}, "expected": "b"}])
    base = dataset["latest_version"]
    rows = client.get(f"/api/datasets/{dataset['id']}/versions/{base}/rows").json()["rows"]
    response = client.post(f"/api/datasets/{dataset['id']}/versions", {
        "base": base, "update": {rows[0]["key"]: {"variables": {"q": "A"}, "expected": "A"}},
        "delete": [rows[1]["key"]], "add": [{"variables": {"q": "c"}, "expected": None}]}, format="json")
    assert response.status_code == 201
    new = client.get(f"/api/datasets/{dataset['id']}/versions/{response.json()['id']}/rows").json()["rows"]
    assert [(r["variables"]["q"], r["key"] == rows[0]["key"]) for r in new] == [("A", True), ("c", False)]
    # A bad cell names its row in the field: the grid marks that row.
    bad = client.post(f"/api/datasets/{dataset['id']}/versions", {
        "base": base, "add": [{"variables": {"q": "ok"}}, {"variables": {"bad name": "x"}}]}, format="json")
    assert bad.status_code == 400
    assert (bad.json()["error"]["code"], bad.json()["error"]["param"]) == ("invalid_variable_name",
                                                                           "add[1].variables")


def test_should_run_with_no_evaluator_storing_outputs_unscored(user, echo_version, backend):
    client = _client(user)
    dataset = _dataset(client)
    response = client.post("/api/evals/runs", {"dataset": dataset["id"], "columns": [
        {"prompt": str(echo_version.prompt_id), "version": str(echo_version.pk)}]}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["evaluators"] == []
    evalrun_drive(response.json()["id"])
    cell = EvalResult.objects.get(run_id=response.json()["id"])
    assert (cell.output, cell.scores, cell.passed) == ("zyx", {}, None)
    run = client.get(f"/api/evals/runs/{response.json()['id']}").json()
    assert run["summary"]["columns"][0]["scores"] == {} and run["summary"]["columns"][0]["passed"] == 0


def test_evaluator_list_explains_each_evaluator(auth_client):
    listed = {e["name"]: e for e in auth_client.get("/api/evals/evaluators").json()}
    assert {"exact", "contains", "tool_calls", "judge"} <= set(listed)
    assert all(e["doc"] for e in listed.values())
    assert listed["tool_calls"]["needs_expected"] and listed["tool_calls"]["args"] == ["arguments"]


def test_run_delete_authorization_matrix(user, echo_version, backend):
    """Owner of the run, the dataset's viewer (its own run, and the owner's),
    stranger, anonymous, revoked grantee; an active run is refused."""
    owner, grantee, stranger, revoked = user, UserFactory(), UserFactory(), UserFactory()
    client = _client(owner)
    dataset = _dataset(client)
    d = dataset["id"]
    client.post(f"/api/datasets/{d}/grants", {"username": grantee.username, "role": "viewer"}, format="json")
    gone = client.post(f"/api/datasets/{d}/grants", {"username": revoked.username, "role": "editor"},
                       format="json").json()
    client.delete(f"/api/datasets/{d}/grants/{gone['id']}")

    def run_of(who, version):
        response = _client(who).post("/api/evals/runs", {"dataset": d, "columns": [
            {"prompt": str(version.prompt_id), "version": str(version.pk)}]}, format="json")
        assert response.status_code == 201, response.json()
        return response.json()["id"]

    theirs = PromptVersionFactory(prompt__owner=grantee, body="{{q}}", model_name=MODEL)
    mine, grantees, active = run_of(owner, echo_version), run_of(grantee, theirs), run_of(owner, echo_version)
    evalrun_drive(mine)
    evalrun_drive(grantees)
    callers = {"grantee": _client(grantee), "stranger": _client(stranger), "anonymous": _client(),
               "revoked": _client(revoked)}
    seen = {who: c.delete(f"/api/evals/runs/{mine}").status_code for who, c in callers.items()}
    assert seen == {"grantee": 403, "stranger": 404, "anonymous": 401, "revoked": 404}
    refused = client.delete(f"/api/evals/runs/{active}")
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "run_active")
    assert callers["grantee"].delete(f"/api/evals/runs/{grantees}").status_code == 204  # its creator
    assert client.delete(f"/api/evals/runs/{mine}").status_code == 204
    assert client.get(f"/api/evals/runs/{mine}").status_code == 404
    assert [str(pk) for pk in EvalRun.objects.values_list("pk", flat=True)] == [active]
    assert not EvalResult.objects.exclude(run_id=active).exists()


CALL = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}}
ARGS = '{"unit": "C", "city": "Paris"}'  # OpenAI's shape: arguments as a JSON string


@pytest.mark.parametrize("calls, expected, args, score, passed", [
    ([CALL], [{"name": "get_weather", "arguments": {"unit": "C", "city": "Paris"}}], {}, 1.0, True),
    ([CALL], [{"type": "function", "function": {"name": "get_weather", "arguments": ARGS}}], {}, 1.0, True),
    ([CALL], {"name": "get_weather", "arguments": {"city": "Paris"}}, {}, 0.0, False),
    ([CALL], {"name": "get_weather", "arguments": {"city": "Paris"}}, {"arguments": "subset"}, 1.0, True),
    ([CALL, {"name": "get_time", "arguments": {}}], [CALL], {}, 0.5, False),
    (None, [CALL], {}, 0.0, False),
    (None, [], {}, 1.0, True),
])
def test_tool_calls_evaluator_compares_calls_as_structures(calls, expected, args, score, passed):
    spec = ev.check_evaluators([{"name": "tool_calls", "args": args}])
    result = ev.score_output(spec, output="", expected=json.dumps(expected), variables={},
                             tool_calls=calls)["tool_calls"]
    assert (result["score"], result["passed"]) == (score, passed), result["reason"]


def test_tool_calls_evaluator_explains_what_differs():
    spec = ev.check_evaluators(["tool_calls"])
    missing = ev.score_output(spec, output="hi", expected=json.dumps([CALL]), variables={}, tool_calls=None)
    assert missing["tool_calls"]["reason"].startswith("the reply made no tool call; missing get_weather(")
    bad = ev.score_output(spec, output="", expected="call get_weather", variables={}, tool_calls=[CALL])
    assert bad["tool_calls"]["reason"].startswith("the expected output is not JSON")


def test_should_evaluate_a_version_with_tools_on_a_model_that_runs_them(user, settings):
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    client = _client(user)
    dataset = _dataset(client, rows=[{"variables": {"q": "Paris?"}, "expected": json.dumps([CALL])}])
    on_fixed = PromptVersionFactory(prompt__owner=user, body="{{q}}", model_name=MODEL, tools=tools)
    body = {"dataset": dataset["id"], "evaluators": ["tool_calls"],
            "columns": [{"prompt": str(on_fixed.prompt_id), "version": str(on_fixed.pk)}]}
    refused = client.post("/api/evals/runs", body, format="json")  # the fixed-cost engine has no tools
    assert refused.status_code == 400
    assert (refused.json()["error"]["code"], refused.json()["error"]["param"]) == ("unsupported_parameter",
                                                                                   "columns[0].model")
    assert "tools" in refused.json()["error"]["message"]
    settings.INFERENCE_MODELS = {**settings.INFERENCE_MODELS, "eval-llama": {"engine": "llamacpp"}}
    on_llama = PromptVersionFactory(prompt__owner=user, body="{{q}}", model_name="eval-llama", tools=tools)
    body["columns"] = [{"prompt": str(on_llama.prompt_id), "version": str(on_llama.pk)}]
    response = client.post("/api/evals/runs", body, format="json")
    assert response.status_code == 201, response.json()
    # A reply with a call, scored as the driver scores a done cell (no llama.cpp model in this test).
    run = EvalRun.objects.get(pk=response.json()["id"])
    row = run.dataset_version.rows.values("id", "index", "variables", "expected").get()
    text = '<tool_call>{"name": "get_weather", "arguments": {"unit": "C", "city": "Paris"}}'
    cell = _scored(run, row, _Column(run.columns.get()), {"result": {"text": text}}, {})
    assert cell.tool_calls == [CALL]
    assert cell.scores["tool_calls"] == {"score": 1.0, "passed": True, "reason": ""} and cell.passed is True


def test_should_run_each_row_several_times_and_sum_up_the_spread(user, echo_version, backend):
    client = _client(user)
    dataset = _dataset(client, rows=[{"variables": {"q": "abc"}, "expected": "cba"},
                                     {"variables": {"q": "xy"}, "expected": "no"}])
    body = {"dataset": dataset["id"], "evaluators": ["exact"], "repeats": 3,
            "columns": [{"prompt": str(echo_version.prompt_id), "version": str(echo_version.pk)}]}
    for bad in (0, 11, "three", True):
        refused = client.post("/api/evals/runs", {**body, "repeats": bad}, format="json")
        assert (refused.status_code, refused.json()["error"]["param"]) == (400, "repeats"), bad
    response = client.post("/api/evals/runs", body, format="json")
    assert response.status_code == 201 and (response.json()["repeats"], response.json()["total"]) == (3, 6)
    evalrun_drive(response.json()["id"])
    cells = EvalResult.objects.filter(run_id=response.json()["id"])
    assert sorted(cells.values_list("row_index", "repeat")) == [(r, k) for r in (0, 1) for k in (0, 1, 2)]
    run = client.get(f"/api/evals/runs/{response.json()['id']}").json()
    exact = run["summary"]["columns"][0]["scores"]["exact"]
    assert (exact["mean"], exact["row_sd_mean"], exact["unstable_rows"]) == (0.5, 0.0, 0)  # a steady engine
    grid = client.get(f"/api/evals/runs/{response.json()['id']}/results").json()["rows"]
    assert [c["repeat"] for c in grid[0]["cells"]] == [0, 1, 2]


def test_spread_across_repeats_is_each_rows_deviation():
    from evals.summary import _spread

    spread = _spread(["a", "a", "b", "b"], [1.0, 0.0, 1.0, 1.0], [True, False, True, True])
    assert spread == {"row_sd_mean": 0.25, "row_sd_max": 0.5, "unstable_rows": 1}


def test_a_viewer_gets_the_grid_read_only(user):
    client = _client(user)
    dataset = _dataset(client)
    viewer = UserFactory()
    client.post(f"/api/datasets/{dataset['id']}/grants", {"username": viewer.username, "role": "viewer"},
                format="json")
    editor_page = client.get(f"/evals/datasets/{dataset['id']}/").content.decode()
    viewer_page = _client(viewer).get(f"/evals/datasets/{dataset['id']}/").content.decode()
    for control in ('id="grid-save"', 'id="paste-box"', 'id="import-file"', 'id="sample-csv"'):
        assert control in editor_page and control not in viewer_page, control
    assert '"canEdit": false' in viewer_page and 'id="rows"' in viewer_page
