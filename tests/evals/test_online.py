"""Online evaluation (evals.online): rules over the API and who may manage
or read them, evaluators that need an expected output refused, the cap, and
sampling as the usage writer stores a batch (a hash per rule and generation:
reruns agree), with the broker away counted as lost while the writer goes on.
Scoring by a real Celery worker and by a judge: test_online_live.py."""

import time
import uuid

import pytest
from celery import current_app
from rest_framework.test import APIClient

from evals.models import OnlineCount, OnlineEvalRule
from evals.online import rule_create, sampled
from generations import online as generations_online
from generations.models import Generation
from generations.store import generations_store
from sharing import services as sharing
from sharing.models import AuditEvent
from tests.factories import PromptFactory, PromptVersionFactory, UserFactory
from tests.inference_worker.workers import delete_queues

pytestmark = [pytest.mark.django_db, pytest.mark.needs_services]


def _client(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture(autouse=True)
def _own_queue(settings):
    """Scoring tasks go to a queue of this test's that no worker reads (deleted after)."""
    settings.ONLINE_EVAL_QUEUE = f"online-test-{uuid.uuid4().hex[:8]}"
    yield
    delete_queues([settings.ONLINE_EVAL_QUEUE])


@pytest.fixture
def world():
    owner = UserFactory()
    prompt = PromptFactory(owner=owner)
    version = PromptVersionFactory(prompt=prompt, body="Hello {{name}}!")
    people = {"owner": owner}
    for name, role in (("editor", "editor"), ("viewer", "viewer"), ("revoked", "editor")):
        people[name] = UserFactory()
        grant = sharing.grant_create(prompt=prompt, actor=owner, role=role, username=people[name].username)
    sharing.grant_revoke(prompt=prompt, grant_id=grant.pk, actor=owner)
    people["stranger"] = UserFactory()
    return {"prompt": prompt, "version": version, **people}


def _url(world, rule=None) -> str:
    base = f"/api/prompts/{world['prompt'].pk}/online-evals"
    return base if rule is None else f"{base}/{rule}"


def _scores_url(world) -> str:
    return f"/api/prompts/{world['prompt'].pk}/versions/{world['version'].pk}/online-scores"


def _code(response) -> str:
    return response.json()["error"]["code"]


def test_editors_manage_rules_viewers_read_them_and_others_get_404(world):
    body = {"evaluator": "json_valid", "sample_rate": 0.25, "label": "production"}
    created = {}
    for who in ("owner", "editor"):
        r = _client(world[who]).post(_url(world), body, format="json")
        assert r.status_code == 201, r.content
        created[who] = r.json()
        spec = {"key": "json_valid", "name": "json_valid", "version": 1, "args": {}}
        assert created[who]["evaluator"] == spec
        assert created[who]["counts"] == {"sampled": 0, "skipped": 0, "scored": 0, "failed": 0, "lost": 0}
    r = _client(world["viewer"]).get(_url(world))
    assert r.status_code == 200
    assert [x["id"] for x in r.json()] == [created["owner"]["id"], created["editor"]["id"]]
    rule = created["owner"]["id"]
    assert _client(world["viewer"]).post(_url(world), body, format="json").status_code == 403
    r = _client(world["viewer"]).patch(_url(world, rule), {"enabled": False}, format="json")
    assert r.status_code == 403
    assert _client(world["viewer"]).delete(_url(world, rule)).status_code == 403
    for who in ("stranger", "revoked", None):
        client = _client(world[who] if who else None)
        for r in (client.get(_url(world)), client.post(_url(world), body, format="json"),
                  client.patch(_url(world, rule), {"enabled": False}, format="json"),
                  client.delete(_url(world, rule)),
                  client.get(_scores_url(world))):
            assert r.status_code == 404 and _code(r) == "prompt_not_found", (who, r.content)
    r = _client(world["editor"]).patch(_url(world, rule), {"enabled": False, "sample_rate": 1}, format="json")
    assert r.status_code == 200 and (r.json()["enabled"], r.json()["sample_rate"]) == (False, 1.0)
    assert _client(world["editor"]).delete(_url(world, rule)).status_code == 204
    assert list(OnlineEvalRule.objects.values_list("pk", flat=True)) == [created["editor"]["id"]]
    for method in ("patch", "delete"):
        r = getattr(_client(world["owner"]), method)(_url(world, rule), {}, format="json")
        assert r.status_code == 404 and _code(r) == "online_rule_not_found"
    r = _client(world["owner"]).delete(_url(world, "not-a-rule"))
    assert r.status_code == 404 and _code(r) == "online_rule_not_found"
    r = _client(world["viewer"]).get(_scores_url(world))
    assert r.status_code == 200 and r.json()["scores"] == {}
    # A share link shows the prompt, not what accounts ran through it.
    _, token = sharing.link_create(actor=world["owner"], mode="public", prompt=world["prompt"])
    for path in (_url(world), _scores_url(world)):
        r = APIClient().get(path, HTTP_X_SHARE_TOKEN=token)
        assert r.status_code == 403 and _code(r) == "forbidden", path
    actions = AuditEvent.objects.filter(prompt_id=world["prompt"].pk, action__startswith="online_eval.")
    assert sorted(actions.values_list("action", "actor_name")) == sorted([
        ("online_eval.changed", world["editor"].username), ("online_eval.created", world["editor"].username),
        ("online_eval.created", world["owner"].username), ("online_eval.deleted", world["editor"].username)])


def test_evaluators_that_need_an_expected_output_and_bad_rules_are_refused(world, settings):
    client = _client(world["owner"])
    for evaluator in ("exact", "similarity", "numeric", "tool_calls", "contains"):
        r = client.post(_url(world), {"evaluator": evaluator, "sample_rate": 1}, format="json")
        assert r.status_code == 400 and _code(r) == "evaluator_needs_expected", evaluator
    contains = {"name": "contains", "args": {"value": "Ada"}}
    r = client.post(_url(world), {"evaluator": contains, "sample_rate": 1}, format="json")
    assert r.status_code == 201, r.content  # its own value: no expected output needed
    rule = r.json()["id"]
    for body, code in (({"evaluator": "nope", "sample_rate": 1}, "unknown_evaluator"),
                       ({"evaluator": "regex", "sample_rate": 1}, "invalid_evaluator_args"),
                       ({"evaluator": "json_valid", "sample_rate": 1.5}, "max_value"),
                       ({"evaluator": "json_valid", "sample_rate": 1, "version": str(uuid.uuid4())},
                        "version_not_found"),
                       ({"evaluator": {"name": "judge", "args": {"prompt": str(uuid.uuid4()),
                                                                 "version": str(uuid.uuid4())}},
                         "sample_rate": 1}, "prompt_not_found")):
        r = client.post(_url(world), body, format="json")
        assert r.status_code in (400, 404) and _code(r) == code, (body, r.content)
    r = client.patch(_url(world, rule), {"evaluator": "exact"}, format="json")
    assert r.status_code == 400 and _code(r) == "evaluator_needs_expected"
    settings.ONLINE_EVAL_MAX_RULES = 2
    r = client.post(_url(world), {"evaluator": "json_valid", "sample_rate": 1}, format="json")
    assert r.status_code == 201
    r = client.post(_url(world), {"evaluator": "json_valid", "sample_rate": 1}, format="json")
    assert r.status_code == 400 and _code(r) == "too_many_online_rules"


def _batch(version, user, n: int, status="ok") -> None:
    """n generations of `version` stored in one writer batch."""
    generations_store([_entry(version, user, status) for _ in range(n)])


def _entry(version, user, status):
    """A (usage record, log entry) pair as the writer stores it (tests.generations.conftest.log's)."""
    request_id = f"online-{uuid.uuid4().hex}"
    row = {"user_id": user.pk, "api_key_id": None, "request_id": request_id, "model": "fixed-cost",
           "version": "", "tier": "free", "prompt_tokens": 5, "completion_tokens": 3, "latency_ms": 100,
           "ttft_ms": 20, "cache_hit": "", "status": status, "error_code": "", "end_user": "",
           "prompt_version": str(version.pk), "prompt_label": "production", "eval_run": None}
    entry = {"source": "run", "checked": True, "variables": {"name": "Ada"},
             "messages": [{"role": "user", "content": "Hello Ada!"}], "params": {}, "output": '{"ok": 1}',
             "at": time.time()}
    return row, entry


def _sampled_count(rule) -> int:
    return sum(OnlineCount.objects.filter(rule=rule).values_list("sampled", flat=True))


def test_sampling_is_a_hash_of_rule_and_generation_at_the_rule_rate(world):
    owner, version = world["owner"], world["version"]
    rules = {rate: rule_create(prompt=world["prompt"], user=owner, evaluator="json_valid", sample_rate=rate)
             for rate in (1.0, 0.5, 0.0)}
    other = rule_create(prompt=world["prompt"], user=owner, evaluator="json_valid", sample_rate=1.0,
                        label="staging")
    newer = PromptVersionFactory(prompt=world["prompt"], parent=version)
    pinned = rule_create(prompt=world["prompt"], user=owner, evaluator="json_valid", sample_rate=1.0,
                         version_id=newer.pk)
    _batch(version, owner, 200)
    ids = list(Generation.objects.filter(version_id=version.pk).values_list("pk", flat=True))
    assert len(ids) == 200
    assert _sampled_count(rules[1.0]) == 200
    # Rate 0; another label; another version.
    assert _sampled_count(rules[0.0]) == _sampled_count(other) == _sampled_count(pinned) == 0
    half = [g for g in ids if sampled(rules[0.5].pk, g, 0.5)]
    assert _sampled_count(rules[0.5]) == len(half) and 70 <= len(half) <= 130
    assert half == [g for g in ids if sampled(rules[0.5].pk, g, 0.5)]  # the same answer again
    # A failed generation is sampled but skipped: nothing to score.
    _batch(version, owner, 3, status="error")
    counts = OnlineCount.objects.filter(rule=rules[1.0])
    assert (sum(c.sampled for c in counts), sum(c.skipped for c in counts)) == (203, 3)


def test_the_writer_stores_its_batch_when_the_broker_is_away(world, settings):
    """A real publish to a port nothing listens on: the generations are stored,
    the sampled ones counted as lost, and while the backoff runs the next
    batch's are counted lost without a try."""
    rule = rule_create(prompt=world["prompt"], user=world["owner"], evaluator="json_valid", sample_rate=1.0)
    settings.ONLINE_EVAL_BROKER_BACKOFF_S = 3600
    conf, amqp = current_app.conf, current_app.amqp
    saved = conf.broker_write_url
    conf.broker_write_url = "amqp://guest:guest@127.0.0.1:1//"
    amqp._producer_pool, current_app._pool = None, None  # new connections, to the dead address
    try:
        _batch(world["version"], world["owner"], 4)
        _batch(world["version"], world["owner"], 2)
    finally:
        conf.broker_write_url = saved
        amqp._producer_pool, current_app._pool = None, None
        generations_online._down_until = 0.0
    assert Generation.objects.filter(version_id=world["version"].pk).count() == 6
    counts = OnlineCount.objects.filter(rule=rule)
    assert (sum(c.sampled for c in counts), sum(c.lost for c in counts)) == (6, 6)

