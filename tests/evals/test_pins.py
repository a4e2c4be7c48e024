"""A prompt's pinned dataset: a saved version runs over it beside its parent on
its own, and the version's scores against the parent's are read back."""

import logging

from rest_framework.test import APIClient

from evals.models import DatasetPin, EvalRun
from evals.run_job import evalrun_drive
from tests.evals.conftest import MODEL
from tests.factories import UserFactory


def _client(user=None):
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client


def _setup(user, echo_version):
    client = _client(user)
    dataset = client.post("/api/datasets/", {"name": "reverse", "rows": [
        {"variables": {"q": "abc"}, "expected": "cba"}, {"variables": {"q": "xy"}, "expected": "yx"}]},
        format="json").json()
    pin = client.put(f"/api/prompts/{echo_version.prompt_id}/eval-pin",
                     {"dataset": dataset["id"], "evaluators": ["exact"]}, format="json")
    assert pin.status_code == 200, pin.json()
    assert pin.json()["dataset_name"] == "reverse"
    assert [e["name"] for e in pin.json()["evaluators"]] == ["exact"]
    return client, dataset


def _save(client, echo_version, body):
    response = client.post(f"/api/prompts/{echo_version.prompt_id}/versions",
                           {"body": body, "model": MODEL, "parent": str(echo_version.pk)}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def test_a_saved_version_runs_over_the_pinned_dataset_beside_its_parent(
        user, echo_version, backend, django_capture_on_commit_callbacks):
    client, dataset = _setup(user, echo_version)
    with django_capture_on_commit_callbacks(execute=True):
        v2 = _save(client, echo_version, "{{q}}!")
    run = EvalRun.objects.get()
    assert run.name == f"on save: v{v2['number']}" and run.owner == user
    columns = [str(c.prompt_version_id) for c in run.columns.order_by("index")]
    assert columns == [str(echo_version.pk), v2["id"]]
    url = f"/api/prompts/{echo_version.prompt_id}/versions/{v2['id']}/eval-deltas"
    assert client.get(url).json()["run"]["status"] == "queued"  # the page says it is on its way
    evalrun_drive(run.pk)
    deltas = client.get(url).json()
    assert deltas["pinned_dataset"] == {"id": dataset["id"], "name": "reverse"}
    assert deltas["run"]["scores"] == {"exact": {"version": 0.0, "parent": 1.0, "delta": -1.0}}
    assert deltas["run"]["url"] == f"/evals/runs/{run.pk}/"
    # The first version has no parent to compare with.
    first = client.get(f"/api/prompts/{echo_version.prompt_id}/versions/{echo_version.pk}/eval-deltas").json()
    assert (first["parent"], first["run"]) == (None, None)


def test_a_version_saves_even_when_its_pinned_run_cannot_start(
        user, echo_version, backend, settings, django_capture_on_commit_callbacks, caplog):
    client, _ = _setup(user, echo_version)
    settings.EVAL_MAX_ACTIVE_RUNS = 0
    with (caplog.at_level(logging.WARNING, logger="evals.pins"),
          django_capture_on_commit_callbacks(execute=True)):
        _save(client, echo_version, "{{q}}?")
    assert not EvalRun.objects.exists()
    assert "too_many_active_jobs" in caplog.text


def test_only_editors_pin_a_dataset_they_may_view(user, echo_version):
    client, dataset = _setup(user, echo_version)
    url = f"/api/prompts/{echo_version.prompt_id}/eval-pin"
    viewer, stranger = UserFactory(), UserFactory()
    grant = {"username": viewer.username, "role": "viewer"}
    client.post(f"/api/prompts/{echo_version.prompt_id}/grants", grant, format="json")
    body = {"dataset": dataset["id"]}
    assert _client(viewer).put(url, body, format="json").status_code == 403
    assert _client(viewer).get(url).status_code == 200
    assert _client(stranger).put(url, body, format="json").status_code == 404
    assert _client().put(url, body, format="json").status_code == 404  # as for any prompt it cannot see
    own = _client(stranger).post("/api/datasets/", {"name": "theirs"}, format="json").json()
    hidden = client.put(url, {"dataset": own["id"]}, format="json")
    assert (hidden.status_code, hidden.json()["error"]["code"]) == (404, "dataset_not_found")
    bad = client.put(url, {"dataset": dataset["id"], "evaluators": ["nope"]}, format="json")
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, "unknown_evaluator")
    assert client.delete(url).status_code == 204 and not DatasetPin.objects.exists()
    assert client.get(url).json()["dataset"] is None
