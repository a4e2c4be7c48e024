"""The regression alarm (generations/regression.py, generations/alerts.py): a
label moves from v1 to v2, generations of each are logged through the label
before and after the move, and the check raises an alert (with its audit entry
and webhook delivery) on a real regression only: not on equal data, not on
thin data, once per move; moving back goes through the label's own rules."""

import datetime

import pytest

from core.error_codes import DomainError
from evals.online import rule_create
from generations.alerts import alert_dismiss, alert_rollback
from generations.models import AlertStatus, Generation, RegressionAlert
from generations.online import online_score
from generations.regression import compare, moves_to_check, regression_check
from generations.store import generations_store
from playground import protection
from playground import services as playground_services
from playground.models import Label, LabelMove
from sharing.models import AuditEvent
from tests.factories import PromptFactory, PromptVersionFactory, UserFactory
from tests.generations.conftest import entry
from webhooks.models import WebhookDelivery
from webhooks.services import endpoint_create

pytestmark = pytest.mark.django_db

N = 60  # generations a side: past REGRESSION_MIN_SAMPLES (40 here)


@pytest.fixture(autouse=True)
def _alarm_settings(settings):
    settings.REGRESSION_MIN_SAMPLES = 40
    settings.REGRESSION_ALPHA = 0.01
    settings.REGRESSION_MIN_RISE = 0.2
    settings.REGRESSION_WINDOW_S = 6 * 3600


@pytest.fixture
def world():
    owner = UserFactory()
    prompt = PromptFactory(owner=owner)
    v1 = PromptVersionFactory(prompt=prompt, body="Hello {{name}}!")
    v2 = PromptVersionFactory(prompt=prompt, parent=v1, body="Hi {{name}}!")
    playground_services.label_move(prompt=prompt, name="production", version_id=v1.pk,
                                   expected_version_id=None, actor=owner)
    return {"owner": owner, "prompt": prompt, "v1": v1, "v2": v2}


def _move(world, to="v2", frm="v1") -> LabelMove:
    playground_services.label_move(prompt=world["prompt"], name="production", version_id=world[to].pk,
                                   expected_version_id=world[frm].pk, actor=world["owner"])
    return LabelMove.objects.filter(label__name="production").latest("id")


def _seed(version, user, moved_at, *, after: bool, latencies, errors=0, label="production"):
    """One generation a latency, a second apart, after the move (or before it, newest last)."""
    start = moved_at.timestamp() + 1 if after else moved_at.timestamp() - len(latencies) - 1
    generations_store([entry(version, user, label=label, latency_ms=ms, ttft_ms=ms // 4,
                             status="error" if i < errors else "ok", at=start + i)
                       for i, ms in enumerate(latencies)])


def _spread(base, width=30):
    return [base + (i * 7) % width for i in range(N)]


def _check(move):
    return regression_check(now=move.created_at + datetime.timedelta(hours=1))


def test_should_raise_one_latency_alert_with_audit_and_webhook_when_the_new_version_is_slower(world):
    endpoint = endpoint_create(owner=world["owner"], url="https://93.184.216.34/hooks",
                               events=["version.regressed"])
    move = _move(world)
    _seed(world["v1"], world["owner"], move.created_at, after=False, latencies=_spread(100))
    _seed(world["v2"], world["owner"], move.created_at, after=True, latencies=_spread(200))
    raised = _check(move)
    assert sorted(a.rule for a in raised) == ["latency_p95", "ttft_p50"]
    alert = RegressionAlert.objects.get(rule="latency_p95")
    assert (alert.label, alert.version_id, alert.previous_version_id) == ("production", world["v2"].pk,
                                                                         world["v1"].pk)
    assert alert.value > 200 and alert.previous_value < 130 and (alert.count, alert.previous_count) == (N, N)
    assert alert.p_value < 1e-6 and alert.status == AlertStatus.OPEN
    audit = AuditEvent.objects.filter(action="version.regressed", target="label:production")
    assert sorted(e.detail["check"] for e in audit) == ["latency_p95", "ttft_p50"]
    deliveries = WebhookDelivery.objects.filter(endpoint=endpoint, event="version.regressed")
    assert deliveries.count() == 2
    assert b'"label":"production"' in bytes(deliveries.first().body)
    # Checked again: the same move raises nothing new.
    assert _check(move) == []
    assert RegressionAlert.objects.count() == 2


def test_should_raise_an_error_rate_alert(world):
    move = _move(world)
    _seed(world["v1"], world["owner"], move.created_at, after=False, latencies=[100] * 100, errors=1)
    _seed(world["v2"], world["owner"], move.created_at, after=True, latencies=[100] * 100, errors=15)
    assert [a.rule for a in _check(move)] == ["error_rate"]
    alert = RegressionAlert.objects.get()
    assert (alert.value, alert.previous_value) == (0.15, 0.01)


def test_should_raise_nothing_on_equal_data_or_on_a_faster_version(world):
    move = _move(world)
    _seed(world["v1"], world["owner"], move.created_at, after=False, latencies=_spread(100), errors=3)
    _seed(world["v2"], world["owner"], move.created_at, after=True, latencies=_spread(100), errors=3)
    assert _check(move) == []
    _seed(world["v2"], world["owner"], move.created_at + datetime.timedelta(minutes=5), after=True,
          latencies=_spread(50))
    assert _check(move) == []


def test_should_raise_nothing_on_thin_data(world):
    move = _move(world)
    _seed(world["v1"], world["owner"], move.created_at, after=False, latencies=[100] * 39)
    _seed(world["v2"], world["owner"], move.created_at, after=True, latencies=[900] * 39, errors=20)
    assert _check(move) == []


def test_should_compare_only_the_same_length_before_the_move_and_only_through_the_label(world):
    move = _move(world)
    # v1's traffic long before the move, and v2's by version id (no label): neither counts.
    _seed(world["v1"], world["owner"], move.created_at - datetime.timedelta(hours=3), after=False,
          latencies=_spread(100))
    _seed(world["v2"], world["owner"], move.created_at, after=True, latencies=_spread(500), label="")
    _seed(world["v2"], world["owner"], move.created_at, after=True, latencies=_spread(500))
    assert _check(move) == []  # v1 has no generations within the hour before the move
    assert regression_check(now=move.created_at + datetime.timedelta(hours=4))  # now it has


def test_should_fire_a_score_check_on_a_drop_and_not_on_a_small_one(settings):
    settings.REGRESSION_MIN_SCORE_DROP = 0.05
    old = {"score:exact": [1.0] * 45 + [0.0] * 15}
    dropped = compare({"score:exact": [1.0] * 30 + [0.0] * 30}, old)
    assert [(f.check, f.value, f.previous_value) for f in dropped] == [("score:exact", 0.5, 0.75)]
    assert compare({"score:exact": [1.0] * 44 + [0.0] * 16}, old) == []
    assert compare({"score:other": [0.0] * 60}, old) == []  # a score of one side only


def test_should_raise_a_score_alert_from_the_online_evaluation_of_production_traffic(world):
    move = _move(world)
    t = move.created_at.timestamp()
    valid = '{"ok": true}'
    generations_store([entry(world["v1"], world["owner"], label="production", output=valid, at=t - N - 1 + i)
                       for i in range(N)])
    generations_store([entry(world["v2"], world["owner"], label="production", at=t + 1 + i,
                             output=valid if i % 3 == 0 else "Sure! Here it is.") for i in range(N)])
    # The rule comes after the traffic (nothing sampled as it was stored): scored here, all of it.
    rule = rule_create(prompt=world["prompt"], user=world["owner"], evaluator="json_valid", sample_rate=1.0)
    online_score(rule.pk, list(Generation.objects.values_list("pk", flat=True)))
    raised = _check(move)
    assert [a.rule for a in raised] == ["score:json_valid"]  # latency, TTFT and errors alike
    assert (raised[0].previous_value, round(raised[0].value, 2)) == (1.0, 0.33)
    assert (raised[0].count, raised[0].previous_count) == (N, N)


def test_should_check_only_labels_that_still_hold_the_version_alone(world):
    move = _move(world)
    now = move.created_at + datetime.timedelta(minutes=1)
    assert [m.pk for m in moves_to_check(now)] == [move.pk]
    v3 = PromptVersionFactory(prompt=world["prompt"], parent=world["v2"], body="Hey {{name}}!")
    playground_services.label_split(prompt=world["prompt"], name="production", variants=[
        {"version": str(world["v2"].pk), "weight": 50}, {"version": str(v3.pk), "weight": 50}],
        expected_version_id=world["v2"].pk, actor=world["owner"])
    assert moves_to_check(now) == []
    # Past the window: no longer checked.
    assert moves_to_check(move.created_at + datetime.timedelta(hours=7)) == []


def _alert(world) -> RegressionAlert:
    move = _move(world)
    _seed(world["v1"], world["owner"], move.created_at, after=False, latencies=_spread(100))
    _seed(world["v2"], world["owner"], move.created_at, after=True, latencies=_spread(200))
    _check(move)
    return RegressionAlert.objects.get(rule="latency_p95")


def test_should_move_the_label_back_and_close_the_versions_open_alerts(world):
    alert = _alert(world)
    done = alert_rollback(prompt=world["prompt"], alert_id=alert.pk, actor=world["owner"])
    assert done.status == AlertStatus.ROLLED_BACK and done.resolved_by == world["owner"]
    assert Label.objects.get(name="production").version_id == world["v1"].pk
    assert set(RegressionAlert.objects.values_list("status", flat=True)) == {AlertStatus.ROLLED_BACK}
    assert AuditEvent.objects.filter(action="regression.rolled_back").count() == 1
    assert AuditEvent.objects.filter(action="label.move", detail__to_version=str(world["v1"].pk)).exists()
    with pytest.raises(DomainError) as refused:
        alert_dismiss(prompt=world["prompt"], alert_id=alert.pk, actor=world["owner"])
    assert refused.value.code == "alert_resolved" and refused.value.status == 409


def test_should_refuse_a_rollback_as_the_label_would_refuse_the_move(world):
    alert = _alert(world)
    v3 = PromptVersionFactory(prompt=world["prompt"], parent=world["v2"], body="Yo {{name}}!")
    _move({**world, "v3": v3}, to="v3", frm="v2")
    with pytest.raises(DomainError) as moved:
        alert_rollback(prompt=world["prompt"], alert_id=alert.pk, actor=world["owner"])
    assert moved.value.code == "label_conflict"
    _move({**world, "v3": v3}, to="v2", frm="v3")
    protection.label_protect(prompt=world["prompt"], name="production", protected=True, require_approval=True,
                             actor=world["owner"])
    with pytest.raises(DomainError) as gated:
        alert_rollback(prompt=world["prompt"], alert_id=alert.pk, actor=world["owner"])
    assert gated.value.code == "approval_required"
    assert RegressionAlert.objects.get(pk=alert.pk).status == AlertStatus.OPEN
    assert Label.objects.get(name="production").version_id == world["v2"].pk


def test_a_dismissed_alert_stays_dismissed(world):
    alert = _alert(world)
    alert_dismiss(prompt=world["prompt"], alert_id=alert.pk, actor=world["owner"])
    assert Label.objects.get(name="production").version_id == world["v2"].pk
    move = LabelMove.objects.get(pk=alert.move_id)
    assert [a.rule for a in _check(move)] == []
    assert RegressionAlert.objects.get(pk=alert.pk).status == AlertStatus.DISMISSED
    for bad in (alert.pk + 1000, "nope", -1, "9" * 30):
        with pytest.raises(DomainError) as missing:
            alert_dismiss(prompt=world["prompt"], alert_id=bad, actor=world["owner"])
        assert missing.value.code == "alert_not_found"
