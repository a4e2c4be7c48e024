"""A review request on a gated label: the approver picks a passing run of the
target version from the gate's candidate runs (or starts one); the approval
moves the label only behind it; gate changes and decisions are audited."""

import pytest

from evals.models import EvalRun
from sharing.models import AuditEvent, Grant, GrantRole
from tests.evals.conftest import MODEL
from tests.evals.test_api import _client, _dataset, _run
from tests.factories import LabelFactory, PromptVersionFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def gated(user, echo_version, backend):
    """production on the echo version, gated on exact over a dataset; a worse and an equal candidate."""
    client = _client(user)
    dataset, _ = _dataset(client)
    prompt = echo_version.prompt
    LabelFactory(version=echo_version, name="production")
    worse = PromptVersionFactory(prompt=prompt, parent=echo_version, body="{{q}}!", model_name=MODEL)
    same = PromptVersionFactory(prompt=prompt, parent=echo_version, body=" {{q}}", model_name=MODEL)
    base = f"/api/prompts/{prompt.pk}/labels/production"
    assert client.put(f"{base}/gate", {"dataset": dataset["id"], "evaluator": "exact", "margin": 0.0},
                      format="json").status_code == 200
    return client, dataset, base, worse, same


def test_should_list_a_versions_runs_with_the_gates_verdict_and_start_one(gated, echo_version):
    client, dataset, base, worse, same = gated
    run = _run(client, dataset["id"], [echo_version, worse, same])
    _run(client, dataset["id"], [echo_version])  # no column for the candidates: not listed
    for version, passed, code in ((same, True, "eval_passed"), (worse, False, "eval_regression")):
        listed = client.get(f"{base}/gate/runs?version={version.pk}").json()
        assert [(r["id"], r["passed"], r["code"]) for r in listed] == [(run["id"], passed, code)]
        assert listed[0]["url"] == f"/evals/runs/{run['id']}/"
    bad = client.get(f"{base}/gate/runs?version=nope").json()["error"]
    assert (bad["code"], bad["field"]) == ("invalid_request", "version")
    other = PromptVersionFactory(model_name=MODEL)
    assert client.get(f"{base}/gate/runs?version={other.pk}").json()["error"]["code"] == "version_not_found"
    ungated = client.get(f"/api/prompts/{echo_version.prompt_id}/labels/staging/gate/runs?version={same.pk}")
    assert (ungated.status_code, ungated.json()["error"]["code"]) == (404, "gate_not_found")

    started = client.post(f"{base}/gate/runs", {"version": str(worse.pk)}, format="json")
    assert started.status_code == 201, started.json()
    assert (started.json()["passed"], started.json()["code"]) == (False, "eval_not_finished")
    made = EvalRun.objects.get(pk=started.json()["id"])
    assert [c.prompt_version_id for c in made.columns.order_by("index")] == [worse.pk, echo_version.pk]
    assert [spec["key"] for spec in made.evaluators] == ["exact"]


def test_should_approve_a_gated_review_only_behind_a_passing_run(gated, echo_version, user):
    client, dataset, base, worse, same = gated
    reviewer = UserFactory(username="rita")
    Grant.objects.create(prompt=echo_version.prompt, user=reviewer, role=GrantRole.EDITOR, created_by=user)
    Grant.objects.create(dataset_id=dataset["id"], user=reviewer, role=GrantRole.VIEWER, created_by=user)
    rita = _client(reviewer)
    run = _run(client, dataset["id"], [echo_version, worse, same])

    def request(version):
        asked = client.post(f"{base}/pending", {"version": str(version.pk), "expected": str(echo_version.pk),
                                                "note": "try it"}, format="json")
        assert asked.status_code == 202, asked.json()
        return f"{base}/pending/{asked.json()['id']}/approve"

    bad, good = request(worse), request(same)
    assert rita.post(bad, {}, format="json").json()["error"]["code"] == "eval_required"
    refused = rita.post(bad, {"eval_run": run["id"]}, format="json")
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "eval_regression")
    assert client.get(base).json()["version"]["id"] == str(echo_version.pk)
    done = rita.post(good, {"eval_run": run["id"]}, format="json")
    assert done.status_code == 200, done.json()
    assert (done.json()["status"], done.json()["eval_run"]) == ("approved", run["id"])
    assert client.get(base).json()["version"]["id"] == str(same.pk)

    assert client.delete(f"{base}/gate").status_code == 204
    actions = list(AuditEvent.objects.filter(target="label:production").order_by("id")
                   .values_list("action", flat=True))
    assert actions[-4:] == ["label.move_requested", "label.move", "label.move_approved", "label.gate_cleared"]
    assert "label.gate_set" in actions
    approved = AuditEvent.objects.get(action="label.move_approved")
    assert (approved.actor_name, approved.detail["eval_run"]) == ("rita", run["id"])
