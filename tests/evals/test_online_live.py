"""Online evaluation scoring for real: stored generations sampled by a rule
and scored by a real Celery worker (its own queue, the test database), the
scores on the version's page beside the version it replaced and in the API;
and a judge (a saved prompt on SmolLM2, through the gateway's batch lane on
the in-process worker) scoring production generations."""

import datetime
import subprocess
import sys
import uuid

import pytest
from rest_framework.test import APIClient

from evals.models import OnlineCount, OnlineScore
from evals.online import rule_create, version_score_samples
from generations import online as generations_online
from generations.models import Generation
from playground import services as playground_services
from tests.evals.test_judge import JUDGE_BODY, SCHEMA
from tests.factories import PromptFactory, PromptVersionFactory
from tests.generations.conftest import log
from tests.inference_client.conftest import database_url, stack_env
from tests.inference_worker.workers import delete_queues
from tests.livesubprocess import ROOT
from tests.polling import wait_for

pytestmark = pytest.mark.needs_services


@pytest.fixture
def queue(settings):
    settings.ONLINE_EVAL_QUEUE = f"online-live-{uuid.uuid4().hex[:8]}"
    yield settings.ONLINE_EVAL_QUEUE
    delete_queues([settings.ONLINE_EVAL_QUEUE])


@pytest.fixture
def scorer(queue, transactional_db, django_db_blocker):
    """A real Celery worker reading the scoring queue, on the test database."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queue, "-P", "threads", "-c", "2",
         "-n", f"{queue}@%h", "-l", "warning", "--without-mingle", "--without-gossip", "--without-heartbeat"],
        cwd=ROOT, env=stack_env(DATABASE_URL=database_url(django_db_blocker)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    yield proc
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


def _labelled(user):
    prompt = PromptFactory(owner=user)
    v1 = PromptVersionFactory(prompt=prompt, body="Hello {{name}}!")
    v2 = PromptVersionFactory(prompt=prompt, parent=v1, body="Hi {{name}}!")
    for version, before in ((v1, None), (v2, v1)):
        playground_services.label_move(prompt=prompt, name="production", version_id=version.pk,
                                       expected_version_id=before and before.pk, actor=user)
    return prompt, v1, v2


def test_a_celery_worker_scores_the_sampled_generations_and_the_page_shows_them(user, scorer):
    prompt, v1, v2 = _labelled(user)
    rule = rule_create(prompt=prompt, user=user, evaluator="json_valid", sample_rate=1.0)
    for output in ('{"a": 1}', "[1, 2]", "{}", "no", "nope", "{broken"):
        log(v2, user, label="production", output=output)
    for _ in range(4):
        log(v1, user, label="production", output='{"ok": true}')
    log(v2, user, label="production", status="error", output="")  # sampled, skipped: nothing to score
    wait_for(lambda: OnlineScore.objects.filter(rule=rule).count() == 10, timeout=60,
             what="the worker to score the 10 generations")
    counts = OnlineCount.objects.filter(rule=rule)
    fields = ("sampled", "skipped", "scored", "failed", "lost")
    assert [sum(getattr(c, f) for c in counts) for f in fields] == [11, 1, 10, 0, 0]
    window = {"since": Generation.objects.order_by("created_at").first().created_at,
              "until": Generation.objects.order_by("-created_at").first().created_at
              + datetime.timedelta(seconds=1)}
    assert sorted(version_score_samples(version_id=v2.pk, **window)["json_valid"]) == [0, 0, 0, 1, 1, 1]
    client = APIClient()
    client.force_login(user)
    body = client.get(f"/api/prompts/{prompt.pk}/versions/{v2.pk}/online-scores?days=1").json()
    figures = body["scores"]["json_valid"]
    assert (figures["count"], figures["mean"], figures["pass_rate"], figures["failed"]) == (6, 0.5, 0.5, 0)
    assert 0 <= figures["ci95"][0] <= 0.5 <= figures["ci95"][1] <= 1
    assert sum(b["count"] for b in figures["buckets"]) == 6
    page = client.get(f"/prompts/{prompt.pk}/versions/{v2.pk}/generations/").content.decode()
    assert "Online scores" in page and "json_valid: mean score" in page
    assert "0.50 (" in page and "pass 50% · n=6" in page  # v2
    assert "1.00 (1.00–1.00) · pass 100% · n=4" in page  # v1, the version production held before


def test_a_judge_scores_production_generations_through_the_batch_lane(user, queue, backend):
    prompt, _, version = _labelled(user)
    judge = PromptVersionFactory(prompt=PromptFactory(owner=user), body=JUDGE_BODY, model_name="smollm2",
                                 response_schema=SCHEMA, temperature=0, max_tokens=24)
    rule = rule_create(prompt=prompt, user=user, sample_rate=1.0,
                       evaluator={"name": "judge", "as": "helpful",
                                  "args": {"prompt": str(judge.prompt_id), "version": str(judge.pk)}})
    ids = [Generation.objects.get(request_id=log(version, user, label="production", output=o,
                                                 variables={"q": q})).pk
           for q, o in (("abc", "cba"), ("2+2?", "4"))]
    # What the queued task runs (the queue here has no worker: this test runs it).
    assert generations_online.online_score(rule.pk, ids) == 2
    scores = list(OnlineScore.objects.filter(rule=rule).order_by("generation_id"))
    assert [s.generation_id for s in scores] == ids
    for s in scores:
        assert s.key == "helpful" and s.error == "" and 0.0 <= s.score <= 1.0 and isinstance(s.reason, str)
    assert generations_online.online_score(rule.pk, ids) == 0  # scored once per rule
    client = APIClient()
    client.force_login(user)
    body = client.get(f"/api/prompts/{prompt.pk}/versions/{version.pk}/online-scores").json()
    assert body["scores"]["helpful"]["count"] == 2
