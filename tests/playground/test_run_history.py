"""Run history: the runs API (list, search, paging, the permalink and who sees
it, delete) and saving a run as a test case. Runs here are stored by the
service the run route calls; test_run_history_live.py stores them from real runs."""

import json
import re
import uuid

import pytest
from rest_framework.test import APIClient

from evals.datasets import dataset_create, dataset_version_create
from evals.models import DatasetRow
from playground.api_runs import list_rows
from playground.models import PlaygroundRun
from playground.runs import run_record
from sharing.services import grant_revoke, grant_upsert
from tests.factories import PromptFactory, PromptVersionFactory, UserFactory


def _run(prompt, user=None, *, output="olleh", variables=None, **fields):
    return run_record(run_id=uuid.uuid4(), prompt=prompt, user=user or prompt.owner,
                      version=fields.pop("version", None),
                      draft=fields.pop("draft", {"system": "", "body": "x"}),
                      variables=variables if variables is not None else {"name": "Ada"},
                      params={"model": "fixed-cost", "temperature": 0}, output=output, tool_calls=None,
                      status=fields.pop("status", "ok"), **fields)


def _client(user=None):
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def prompt(user):
    return PromptFactory(owner=user)


def test_should_cap_a_long_output_and_flag_it(prompt, settings):
    settings.PLAYGROUND_RUN_OUTPUT_MAX_CHARS = 10
    run = _run(prompt, output="x" * 25)
    assert (run.output, run.output_size, run.output_truncated) == ("x" * 10, 25, True)
    short = _run(prompt, output="short")
    assert (short.output, short.output_truncated) == ("short", False)


def test_should_parse_the_object_of_a_structured_run(prompt):
    run = run_record(run_id=uuid.uuid4(), prompt=prompt, user=prompt.owner, version=None, draft=None,
                     variables={}, params={"model": "m", "response_format": {"type": "json_object"},
                                           "seed": 3, "stream_options": {"include_usage": True}},
                     output='{"a": 1}', tool_calls=None, status="ok")
    assert run.parsed == {"a": 1}
    assert run.params["seed"] == 3 and "stream_options" not in run.params  # only what a run keeps


@pytest.mark.parametrize("response_format", [[None, None], "json_object", {"type": "text"}])
def test_a_refused_runs_malformed_response_format_is_kept_as_sent_and_not_parsed(prompt, response_format):
    # The fuzzer's case: the gateway refused the run (400), and its record must still be written.
    run = run_record(run_id=uuid.uuid4(), prompt=None, user=prompt.owner, version=None, draft=None,
                     variables={}, params={"model": "", "response_format": response_format}, output="",
                     tool_calls=None, status="error", error_code="invalid_type")
    assert (run.parsed, run.params["response_format"], run.status) == (None, response_format, "error")


def test_should_list_runs_newest_first_in_pages(auth_client, prompt):
    made = [_run(prompt, output=f"out {i}") for i in range(5)]
    first = auth_client.get(f"/api/prompts/{prompt.pk}/runs?page_size=2")
    assert first.status_code == 200, first.content
    body = first.json()
    assert [r["id"] for r in body["results"]] == [str(made[4].pk), str(made[3].pk)]
    assert body["results"][0]["first_line"] == "out 4" and body["results"][0]["draft"] is True
    second = auth_client.get(body["next"])
    assert [r["id"] for r in second.json()["results"]] == [str(made[2].pk), str(made[1].pk)]


@pytest.mark.parametrize("output", [
    "short", "  \n\nfirst\nsecond", "x" * 5000, "\n" * 1500 + "late line\nmore", " " * 990 + "y" * 300,
    "z" * 999 + "\nnext", ""],
    ids=["short", "blank-lines", "long-line", "late-line", "spaces", "head-line", "empty"])
def test_should_list_the_same_first_line_and_draft_as_the_run_without_reading_whole_outputs(
        auth_client, prompt, output):
    run = _run(prompt, output=output, draft=None if output == "short" else {"system": "", "body": "x"},
               version=PromptVersionFactory(prompt=prompt))
    row = auth_client.get(f"/api/prompts/{prompt.pk}/runs").json()["results"][0]
    detail = auth_client.get(f"/api/runs/{run.pk}").json()
    same = [k for k in row if k != "draft"]  # the detail's draft is the draft itself
    assert {k: row[k] for k in same} == {k: detail[k] for k in same}
    assert row["draft"] is (detail["draft"] is not None) is (output != "short")
    assert row["version_number"] == run.version.number
    listed = list_rows(PlaygroundRun.objects.filter(pk=run.pk)).get()
    assert {"output", "draft", "params", "variables", "search_text"} <= listed.get_deferred_fields()


def test_should_search_variables_and_output_and_filter_mine(auth_client, prompt, user):
    other = UserFactory()
    grant_upsert(actor=user, role="editor", user=other, prompt=prompt)
    by_var = _run(prompt, variables={"city": "Lisbon"}, output="nothing")
    by_out = _run(prompt, variables={}, output="sunny in LISBON today")
    _run(prompt, variables={"city": "Oslo"}, output="cold")
    theirs = _run(prompt, other, output="Lisbon again")
    found = auth_client.get(f"/api/prompts/{prompt.pk}/runs", {"q": "lisbon"}).json()["results"]
    assert {r["id"] for r in found} == {str(by_var.pk), str(by_out.pk), str(theirs.pk)}
    mine = auth_client.get(f"/api/prompts/{prompt.pk}/runs", {"q": "lisbon", "mine": "1"}).json()["results"]
    assert {r["id"] for r in mine} == {str(by_var.pk), str(by_out.pk)}


@pytest.mark.parametrize("query, code", [
    ("mine=yes", "invalid_value"), ("q=" + "x" * 201, "invalid_value"), ("page=2", "unknown_parameter")])
def test_should_refuse_bad_list_params_with_a_stable_code(auth_client, prompt, query, code):
    response = auth_client.get(f"/api/prompts/{prompt.pk}/runs?{query}")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == code


def test_should_refuse_a_broken_cursor_without_a_500(auth_client, prompt):
    _run(prompt)
    response = auth_client.get(f"/api/prompts/{prompt.pk}/runs?cursor=not-a-cursor")
    assert 400 <= response.status_code < 500, response.content
    assert response.json()["error"]["code"]


def test_should_show_the_permalink_to_whoever_may_view_the_prompt_and_404_to_the_rest(prompt, user):
    """The matrix: owner, grantee, team-less stranger, anonymous, revoked grant."""
    version = PromptVersionFactory(prompt=prompt)
    run = _run(prompt, version=version, draft=None)
    grantee, stranger, revoked = UserFactory(), UserFactory(), UserFactory()
    grant_upsert(actor=user, role="viewer", user=grantee, prompt=prompt)
    gone = grant_upsert(actor=user, role="viewer", user=revoked, prompt=prompt)
    grant_revoke(grant_id=gone.pk, actor=user, prompt=prompt)
    cells = {"owner": (user, 200), "grantee": (grantee, 200), "stranger": (stranger, 404),
             "anonymous": (None, 404), "revoked": (revoked, 404)}
    for who, (principal, expected) in cells.items():
        client = _client(principal)
        detail = client.get(f"/api/runs/{run.pk}")
        assert detail.status_code == expected, (who, detail.content)
        listing = client.get(f"/api/prompts/{prompt.pk}/runs")
        assert listing.status_code == expected, (who, listing.content)
        if expected == 404:
            assert detail.json()["error"]["code"] == "run_not_found", who
            assert str(prompt.pk) not in detail.content.decode(), who
        else:
            body = detail.json()
            assert body["version"] == str(version.pk) and body["version_number"] == version.number
            assert body["variables"] == {"name": "Ada"} and body["output"] == "olleh"
    unknown = _client(user).get(f"/api/runs/{uuid.uuid4()}")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "run_not_found"
    assert _client(user).get("/api/runs/not-a-uuid").json()["error"]["code"] == "run_not_found"


def test_should_let_only_the_author_delete_a_run(prompt, user):
    grantee = UserFactory()
    grant_upsert(actor=user, role="editor", user=grantee, prompt=prompt)
    run = _run(prompt)
    refused = _client(grantee).delete(f"/api/runs/{run.pk}")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    assert _client(UserFactory()).delete(f"/api/runs/{run.pk}").status_code == 404
    assert _client(user).delete(f"/api/runs/{run.pk}").status_code == 204
    assert not PlaygroundRun.objects.filter(pk=run.pk).exists()


def test_should_save_a_run_as_a_test_case_in_a_new_dataset_version(auth_client, prompt, user):
    dataset = dataset_create(owner=user, name="cases")
    base = dataset_version_create(dataset=dataset, author=user, add=[{"variables": {"name": "Bo"}}])
    run = _run(prompt, variables={"name": "Ada"}, output="adA olleH")
    response = auth_client.post(f"/api/runs/{run.pk}/test-case", {"dataset_id": str(dataset.pk)},
                                format="json")
    assert response.status_code == 201, response.content
    assert response.json()["number"] == 2 and response.json()["row_count"] == 2
    rows = list(DatasetRow.objects.filter(version_id=response.json()["id"]).order_by("index"))
    assert rows[0].variables == {"name": "Bo"}
    assert (rows[1].variables, rows[1].expected) == ({"name": "Ada"}, "adA olleH")
    assert rows[1].metadata == {"run": str(run.pk)}
    assert str(base.pk) == response.json()["parent"]


def test_should_refuse_a_test_case_for_an_unknown_run_or_a_foreign_dataset(auth_client, prompt, user):
    mine = dataset_create(owner=user, name="mine")
    foreign = dataset_create(owner=UserFactory(), name="theirs")
    run = _run(prompt)
    unknown = auth_client.post(f"/api/runs/{uuid.uuid4()}/test-case", {"dataset_id": str(mine.pk)},
                               format="json")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "run_not_found"
    other = auth_client.post(f"/api/runs/{run.pk}/test-case", {"dataset_id": str(foreign.pk)}, format="json")
    assert other.status_code == 404 and other.json()["error"]["code"] == "dataset_not_found"
    bad = auth_client.post(f"/api/runs/{run.pk}/test-case", {"dataset_id": "nope"}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "dataset_id"
    stranger_run = _run(PromptFactory())
    hidden = auth_client.post(f"/api/runs/{stranger_run.pk}/test-case", {"dataset_id": str(mine.pk)},
                              format="json")
    assert hidden.status_code == 404 and hidden.json()["error"]["code"] == "run_not_found"
    assert not mine.versions.exists()


def test_should_open_the_permalink_page_on_the_prompt_page_and_404_for_others(prompt, user):
    from django.test import Client

    run = _run(prompt)
    owner = Client()
    owner.force_login(user)
    response = owner.get(f"/runs/{run.pk}/")
    assert response.status_code == 302 and response["Location"] == f"/prompts/{prompt.pk}/?run={run.pk}"
    page = owner.get(response["Location"])
    assert page.status_code == 200 and f'"runId": "{run.pk}"' in page.content.decode()
    other_prompt = PromptFactory(owner=user)
    assert owner.get(f"/prompts/{other_prompt.pk}/?run={run.pk}").status_code == 404
    stranger = Client()
    stranger.force_login(UserFactory())
    assert stranger.get(f"/runs/{run.pk}/").status_code == 404
    assert owner.get(f"/runs/{uuid.uuid4()}/").status_code == 404


def test_a_refused_run_with_nul_and_lone_surrogates_is_stored_readable(prompt):
    # The fuzzer's second case: PostgreSQL holds neither NUL nor a lone surrogate.
    run = run_record(run_id=uuid.uuid4(), prompt=None, user=prompt.owner, version=None,
                     draft={"messages": [{"role": "user", "content": "a\x00b"}]},
                     variables={"x\ud800": "\udfff"}, params={"model": "m\x00", "stop": ["\ud83d"]},
                     output="o\x00", tool_calls=None, status="error", error_code="invalid_type")
    run.refresh_from_db()
    assert run.draft["messages"][0]["content"] == "ab"
    assert run.variables == {"x\ufffd": "\ufffd"} and run.params["stop"] == ["\ufffd"]
    assert (run.model, run.output) == ("m", "o")


def _page_config(html: bytes) -> dict:
    return json.loads(re.search(rb'id="page-config" type="application/json">(.*?)</script>', html, re.S)[1])


def test_the_playground_page_carries_the_runs_first_page_as_the_api_answers_it(auth_client, prompt):
    for i in range(23):
        _run(prompt, output=f"out {i}")
    carried = _page_config(auth_client.get(f"/prompts/{prompt.pk}/").content)["runs"]
    asked = auth_client.get(f"/api/prompts/{prompt.pk}/runs?page_size=20").json()
    assert carried == asked and len(carried["results"]) == 20
    rest = auth_client.get(carried["next"]).json()  # its next link pages on in the API
    assert [r["first_line"] for r in rest["results"]] == ["out 2", "out 1", "out 0"]


def test_the_scratch_playground_carries_only_the_callers_scratch_runs(auth_client, user, prompt):
    _run(prompt, output="named")
    mine = _run(None, user, output="scratch")
    _run(None, UserFactory(), output="someone else's")
    carried = _page_config(auth_client.get("/playground/").content)["runs"]
    assert [r["id"] for r in carried["results"]] == [str(mine.id)] and carried["next"] is None
