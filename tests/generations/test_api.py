"""The generations log's API: who sees a generation (404 for everyone else,
and once its prompt is gone), the list's filters and keyset paging, a large
output in the object store, a generation as a dataset row, and the version's
figures beside the previous version's."""

import time

import pytest
from rest_framework.test import APIClient

from core.blobstore import get_blob_store
from evals.datasets import dataset_create
from generations.models import Generation
from playground import services as playground_services
from sharing import services as sharing
from tests.factories import PromptFactory, PromptVersionFactory, UserFactory
from tests.generations.conftest import log

pytestmark = pytest.mark.django_db


def _client(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def world():
    owner = UserFactory()
    prompt = PromptFactory(owner=owner)
    v1 = PromptVersionFactory(prompt=prompt, body="Hello {{name}}!")
    v2 = PromptVersionFactory(prompt=prompt, parent=v1, body="Hi {{name}}!")
    for version in (v1, v2):
        playground_services.label_move(prompt=prompt, name="production", version_id=version.pk,
                                       expected_version_id=None if version is v1 else v1.pk, actor=owner)
    return {"owner": owner, "prompt": prompt, "v1": v1, "v2": v2}


def _one(world) -> Generation:
    return Generation.objects.get(request_id=log(world["v2"], world["owner"], label="production"))


def test_should_show_a_generation_to_who_may_view_its_prompt_and_404_to_everyone_else(world):
    g = _one(world)
    grantee, stranger, revoked = UserFactory(), UserFactory(), UserFactory()
    sharing.grant_create(prompt=world["prompt"], actor=world["owner"], role="viewer",
                         username=grantee.username)
    grant = sharing.grant_create(prompt=world["prompt"], actor=world["owner"], role="viewer",
                                 username=revoked.username)
    sharing.grant_revoke(prompt=world["prompt"], grant_id=grant.pk, actor=world["owner"])
    for user in (world["owner"], grantee):
        r = _client(user).get(f"/api/generations/{g.pk}")
        assert r.status_code == 200, r.content
        assert r.json()["variables"] == {"name": "Ada"} and r.json()["version"] == str(world["v2"].pk)
    for user in (stranger, revoked, None):
        for path in (f"/api/generations/{g.pk}", f"/api/generations/{g.pk}/output"):
            r = _client(user).get(path)
            assert r.status_code == 404 and r.json()["error"]["code"] == "generation_not_found", (user, path)
        r = _client(user).get(f"/api/prompts/{world['prompt'].pk}/generations")
        assert r.status_code == 404 and r.json()["error"]["code"] == "prompt_not_found"
    # An id never used, and one that is no id, answer the same.
    for bad in (g.pk + 1000, "nope", "9" * 40):
        r = _client(world["owner"]).get(f"/api/generations/{bad}")
        assert r.status_code == 404 and r.json()["error"]["code"] == "generation_not_found"


def test_should_404_a_generation_whose_prompt_was_deleted(world):
    g = _one(world)
    world["prompt"].delete()
    r = _client(world["owner"]).get(f"/api/generations/{g.pk}")
    assert r.status_code == 404 and r.json()["error"]["code"] == "generation_not_found"


def test_should_not_log_a_claim_on_a_prompt_the_caller_cannot_see(world):
    stranger = UserFactory()
    log(world["v2"], stranger, checked=False)  # X-Prompt-Version of someone else's version
    log(world["v2"], world["owner"], checked=False)
    assert list(Generation.objects.values_list("user_id", flat=True)) == [world["owner"].pk]


def test_should_filter_and_page_the_list_newest_first(world):
    owner, v1, v2 = world["owner"], world["v1"], world["v2"]
    ids = [log(v2, owner, label="production", variables={"name": f"user {i}"}) for i in range(7)]
    log(v2, owner, status="error", error_code="engine_error", output="")
    log(v1, owner, output="An older answer")
    log(v2, owner, model="other-model", output="Another model")
    client, base = _client(owner), f"/api/prompts/{world['prompt'].pk}/generations"

    page = client.get(base, {"version": v2.pk, "label": "production", "page_size": 3}).json()
    seen = [g["id"] for g in page["results"]]
    while page["next"]:
        page = client.get(page["next"]).json()
        seen += [g["id"] for g in page["results"]]
    newest_first = Generation.objects.filter(request_id__in=ids).order_by("-created_at", "-id")
    assert seen == list(newest_first.values_list("id", flat=True)) and len(seen) == 7
    errors = client.get(base, {"status": "error"}).json()["results"]
    assert [g["error_code"] for g in errors] == ["engine_error"]
    assert [g["output_head"] for g in client.get(base, {"version": v1.pk}).json()["results"]] == [
        "An older answer"]
    other = client.get(base, {"model": "other-model"}).json()["results"]
    assert [g["model"] for g in other] == ["other-model"]
    found = client.get(base, {"q": "USER 3"}).json()["results"]
    assert [g["variables"] for g in found] == [{"name": "user 3"}]
    assert client.get(base, {"since": "2999-01-01T00:00:00Z"}).json()["results"] == []
    assert len(client.get(base, {"until": "2999-01-01T00:00:00Z"}).json()["results"]) == 10
    # An offset PostgreSQL would refuse (past 15:59) is read in UTC.
    assert len(client.get(base, {"until": "8511-01-10T05:37:07+18:21"}).json()["results"]) == 10


@pytest.mark.parametrize("params, field", [({"status": "weird"}, "status"), ({"since": "yesterday"}, "since"),
                                           ({"version": "v2"}, "version"), ({"q": "x" * 201}, "q"),
                                           ({"sort": "id"}, "sort"),
                                           ({"since": "2026-02-30T00:00:00Z"}, "since"),
                                           ({"until": "0001-01-01T00:00:00+18:21"}, "until")])
def test_should_refuse_bad_list_filters_at_the_field(world, params, field):
    r = _client(world["owner"]).get(f"/api/prompts/{world['prompt'].pk}/generations", params)
    assert r.status_code == 400 and r.json()["error"]["field"] == field


def test_should_store_a_large_output_in_the_object_store_and_trim_it_in_lists(world, settings):
    big = "x" * (10 * 1024 * 1024)
    g = Generation.objects.get(request_id=log(world["v2"], world["owner"], output=big))
    assert g.output_blob and g.output_size == len(big)
    assert len(g.output) == settings.GENERATIONS_PREVIEW_CHARS
    assert get_blob_store().size(g.output_blob) == len(big)
    client = _client(world["owner"])
    listed = client.get(f"/api/prompts/{world['prompt'].pk}/generations").json()["results"][0]
    assert len(listed["output_head"]) == 200 and listed["output_size"] == len(big)
    detail = client.get(f"/api/generations/{g.pk}").json()
    assert detail["output_truncated"] and detail["output_url"] == f"/api/generations/{g.pk}/output"
    whole = client.get(detail["output_url"])
    assert whole.status_code == 200 and len(whole.content) == len(big)


def test_should_add_a_generation_to_a_dataset_with_the_expected_output_as_edited(world):
    g = _one(world)
    dataset = dataset_create(owner=world["owner"], name="regressions")
    r = _client(world["owner"]).post(f"/api/generations/{g.pk}/test-case",
                                     {"dataset_id": str(dataset.pk), "expected": "Hello, Ada."},
                                     format="json")
    assert r.status_code == 201, r.content
    row = dataset.versions.get(pk=r.json()["id"]).rows.get()
    assert (row.variables, row.expected, row.metadata["generation"]) == ({"name": "Ada"}, "Hello, Ada.", g.pk)
    # Without `expected`, the output is the expected output; a stranger learns nothing.
    r = _client(world["owner"]).post(f"/api/generations/{g.pk}/test-case", {"dataset_id": str(dataset.pk)},
                                     format="json")
    assert dataset.versions.get(pk=r.json()["id"]).rows.last().expected == "Hi Ada"
    r = _client(UserFactory()).post(f"/api/generations/{g.pk}/test-case", {"dataset_id": str(dataset.pk)},
                                    format="json")
    assert r.status_code == 404 and r.json()["error"]["code"] == "generation_not_found"


def test_should_give_the_versions_figures_beside_the_previous_production_version(world):
    owner, v1, v2 = world["owner"], world["v1"], world["v2"]
    for i in range(20):
        log(v2, owner, label="production", latency_ms=100 + i, status="error" if i < 2 else "ok")
        log(v1, owner, label="production", latency_ms=300)
    log(v2, owner, label="staging", latency_ms=5000)
    r = _client(owner).get(f"/api/prompts/{world['prompt'].pk}/versions/{v2.pk}/generation-metrics",
                           {"label": "production", "days": "1"})
    assert r.status_code == 200, r.content
    body = r.json()
    current, previous = body["version"]["total"], body["previous"]["total"]
    assert body["previous"]["id"] == str(v1.pk) and body["labels"] == ["production"]
    assert (current["count"], current["errors"], previous["count"]) == (20, 2, 20)
    assert current["latency_p50_ms"] == pytest.approx(109.5) and previous["latency_p95_ms"] == 300
    low, high = current["error_rate_ci"]
    assert low < 0.1 < high and current["latency_mean_ci"][0] < 109.5 < current["latency_mean_ci"][1]
    assert sum(b["count"] for b in body["version"]["buckets"]) == 20


def test_should_keep_generations_within_retention(world, settings):
    from django.core.management import call_command

    old = log(world["v2"], world["owner"], at=time.time() - 40 * 86400)
    new = log(world["v2"], world["owner"])
    settings.GENERATIONS_RETENTION_DAYS = 30
    call_command("generations_sweep")
    assert list(Generation.objects.values_list("request_id", flat=True)) == [new] and old != new


def test_should_page_the_version_page_and_404_it_to_a_stranger(world, client):
    from generations import views

    owner, v2 = world["owner"], world["v2"]
    ids = [log(v2, owner, variables={"name": f"n{i}"}, at=1_700_000_000 + i)
           for i in range(views.PAGE_SIZE + 3)]
    client.force_login(owner)
    url = f"/prompts/{world['prompt'].pk}/versions/{v2.pk}/generations/"
    first = client.get(url)
    assert first.status_code == 200 and len(first.context["generations"]) == views.PAGE_SIZE
    second = client.get(url + first.context["older"])
    shown = [g.request_id for g in first.context["generations"]] + [
        g.request_id for g in second.context["generations"]]
    assert shown == ids[::-1] and second.context["older"] is None
    client.force_login(UserFactory())
    assert client.get(url).status_code == 404


def test_should_store_only_what_the_redaction_hook_returns(world, settings):
    settings.GENERATIONS_REDACT = "tests.generations.conftest.scrub"
    g = Generation.objects.get(request_id=log(world["v2"], world["owner"], output="Hi Ada"))
    assert (g.variables, g.output) == ({"name": "<name>"}, "Hi <name>")
    assert g.messages[0]["content"] == "Hello <name>!"
    client = _client(world["owner"])
    assert client.get(f"/api/prompts/{world['prompt'].pk}/generations", {"q": "ada"}).json()["results"] == []


def test_should_compare_a_split_arm_with_the_splits_control(world):
    owner, prompt, v1, v2 = world["owner"], world["prompt"], world["v1"], world["v2"]
    v3 = PromptVersionFactory(prompt=prompt, parent=v2, body="Hey {{name}}!")
    playground_services.label_split(prompt=prompt, name="canary", expected_version_id=None, actor=owner,
                                    variants=[{"version": str(v1.pk), "weight": 80},
                                              {"version": str(v3.pk), "weight": 20}])
    log(v1, owner, label="canary", latency_ms=100)
    log(v3, owner, label="canary", latency_ms=300)
    body = _client(owner).get(f"/api/prompts/{prompt.pk}/versions/{v3.pk}/generation-metrics",
                              {"label": "canary"}).json()
    assert (body["labels"], body["compared_as"], body["previous"]["id"]) == (["canary"], "split", str(v1.pk))
    p50s = body["version"]["total"]["latency_p50_ms"], body["previous"]["total"]["latency_p50_ms"]
    assert p50s == (300, 100)


def test_should_show_the_evaluation_scores_of_runs_whose_dataset_the_reader_may_see(world):
    from django.utils import timezone

    from evals.datasets import dataset_version_create
    from evals.models import EvalColumn, EvalRun

    owner, v2 = world["owner"], world["v2"]
    dataset = dataset_create(owner=owner, name="greetings")
    rows = dataset_version_create(dataset=dataset, author=owner, add=[{"variables": {"name": "Ada"}}])
    run = EvalRun.objects.create(owner=owner, dataset_version=rows, name="nightly", status="done",
                                 evaluators=[{"name": "exact_match", "key": "exact_match"}],
                                 finished_at=timezone.now(),
                                 summary={"columns": [{"column": 0, "scores": {"exact_match": {
                                     "mean": 0.75, "ci95": [0.5, 1.0], "pass_rate": 0.75}}}]})
    EvalColumn.objects.create(run=run, index=0, prompt_version=v2, model_name="fixed-cost", params={})
    path = f"/api/prompts/{world['prompt'].pk}/versions/{v2.pk}/generation-metrics"
    scores = _client(owner).get(path).json()["version"]["evals"]
    assert [(e["run"], e["dataset"], e["scores"]) for e in scores] == [
        (str(run.pk), "greetings", {"exact_match": {"mean": 0.75, "ci95": [0.5, 1.0]}})]
    page = _client(owner).get(f"/prompts/{world['prompt'].pk}/versions/{v2.pk}/generations/")
    assert "exact_match 0.75 (0.50–1.00)" in page.content.decode()
    grantee = UserFactory()  # may view the prompt, not the dataset
    sharing.grant_create(prompt=world["prompt"], actor=owner, role="viewer", username=grantee.username)
    assert _client(grantee).get(path).json()["version"]["evals"] == []
