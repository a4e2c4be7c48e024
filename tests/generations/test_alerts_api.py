"""The regression alerts API: who sees the alerts (owner, editor and viewer
grantees; a stranger, a revoked grantee and the signed-out get 404), who acts
on them (owner and editors), the list's order and paging, and the refusals."""

import pytest
from rest_framework.test import APIClient

from generations.models import AlertStatus, RegressionAlert
from playground import services as playground_services
from playground.models import Label, LabelMove
from sharing import services as sharing
from tests.factories import PromptFactory, PromptVersionFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # ~0.5 s a user otherwise


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
    for version, expected in ((v1, None), (v2, v1.pk)):
        playground_services.label_move(prompt=prompt, name="production", version_id=version.pk,
                                       expected_version_id=expected, actor=owner)
    move = LabelMove.objects.filter(to_version=v2).get()
    people = {"owner": owner}
    for name, role in (("editor", "editor"), ("viewer", "viewer"), ("revoked", "editor")):
        people[name] = UserFactory()
        grant = sharing.grant_create(prompt=prompt, actor=owner, role=role, username=people[name].username)
    sharing.grant_revoke(prompt=prompt, grant_id=grant.pk, actor=owner)
    people["stranger"] = UserFactory()
    people["anonymous"] = None
    return {"prompt": prompt, "v1": v1, "v2": v2, "move": move, "people": people}


def _alert(world, rule="latency_p95", **fields) -> RegressionAlert:
    return RegressionAlert.objects.create(
        prompt=world["prompt"], label="production", version=world["v2"], previous_version=world["v1"],
        move_id=world["move"].pk, moved_at=world["move"].created_at, rule=rule, value=480.0,
        previous_value=120.0, count=80, previous_count=75, p_value=1e-9, **fields)


def _url(world, alert=None, action=""):
    base = f"/api/prompts/{world['prompt'].pk}/alerts"
    return base if alert is None else f"{base}/{alert.pk if hasattr(alert, 'pk') else alert}/{action}"


@pytest.mark.parametrize(("who", "sees"), [("owner", True), ("editor", True), ("viewer", True),
                                           ("stranger", False), ("anonymous", False), ("revoked", False)])
def test_should_list_alerts_to_whoever_views_the_prompt(world, who, sees):
    alert = _alert(world)
    r = _client(world["people"][who]).get(_url(world))
    if not sees:
        assert r.status_code == 404 and r.json()["error"]["code"] == "prompt_not_found"
        return
    assert r.status_code == 200, r.content
    [shown] = r.json()["results"]
    assert shown["id"] == alert.pk and shown["check"] == "latency_p95" and shown["status"] == "open"
    assert shown["version"] == {"id": str(world["v2"].pk), "number": world["v2"].number}
    assert shown["previous_version"]["number"] == world["v1"].number
    assert (shown["value"], shown["previous_value"], shown["count"]) == (480.0, 120.0, 80)


@pytest.mark.parametrize(("who", "status", "code"), [
    ("owner", 200, None), ("editor", 200, None), ("viewer", 403, "forbidden"),
    ("stranger", 404, "prompt_not_found"), ("anonymous", 404, "prompt_not_found"),
    ("revoked", 404, "prompt_not_found")])
@pytest.mark.parametrize("action", ["rollback", "dismiss"])
def test_should_let_editors_act_on_alerts(world, who, status, code, action):
    alert = _alert(world)
    r = _client(world["people"][who]).post(_url(world, alert, action))
    assert r.status_code == status, r.content
    held = Label.objects.get(name="production").version_id
    if code is not None:
        assert r.json()["error"]["code"] == code
        assert RegressionAlert.objects.get().status == AlertStatus.OPEN and held == world["v2"].pk
        return
    expected = AlertStatus.ROLLED_BACK if action == "rollback" else AlertStatus.DISMISSED
    assert r.json()["status"] == expected and r.json()["resolved_by"] == world["people"][who].username
    assert held == (world["v1"].pk if action == "rollback" else world["v2"].pk)
    again = _client(world["people"][who]).post(_url(world, alert, action))
    assert again.status_code == 409 and again.json()["error"]["code"] == "alert_resolved"
    assert again.json()["error"]["status"] == expected


def test_should_list_open_alerts_first_then_newest_and_page_them(world):
    closed = _alert(world, rule="error_rate", status=AlertStatus.DISMISSED)
    first = _alert(world, rule="latency_p95")
    second = _alert(world, rule="ttft_p50")
    late_closed = _alert(world, rule="score:exact", status=AlertStatus.ROLLED_BACK)
    client = _client(world["people"]["viewer"])
    seen, url = [], _url(world) + "?page_size=1"
    while url:
        page = client.get(url).json()
        seen += [a["id"] for a in page["results"]]
        url = page["next"]
    assert seen == [second.pk, first.pk, late_closed.pk, closed.pk]
    opened = client.get(_url(world) + "?status=open").json()["results"]
    assert [a["id"] for a in opened] == [second.pk, first.pk]
    bad = client.get(_url(world) + "?status=closed")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_value"


def test_should_404_an_alert_of_another_prompt_or_no_alert(world):
    other = PromptFactory(owner=world["people"]["owner"])
    alert = _alert(world)
    client = _client(world["people"]["owner"])
    for url in (f"/api/prompts/{other.pk}/alerts/{alert.pk}/dismiss", _url(world, alert.pk + 99, "dismiss"),
                _url(world, "nope", "rollback"), _url(world, "9" * 40, "rollback")):
        r = client.post(url)
        assert r.status_code == 404 and r.json()["error"]["code"] == "alert_not_found", url
    assert RegressionAlert.objects.get().status == AlertStatus.OPEN


def test_should_answer_a_refused_move_back_with_the_labels_code(world):
    alert = _alert(world)
    v3 = PromptVersionFactory(prompt=world["prompt"], parent=world["v2"], body="Yo {{name}}!")
    playground_services.label_move(prompt=world["prompt"], name="production", version_id=v3.pk,
                                   expected_version_id=world["v2"].pk, actor=world["people"]["owner"])
    r = _client(world["people"]["editor"]).post(_url(world, alert, "rollback"))
    assert r.status_code == 409 and r.json()["error"]["code"] == "label_conflict"
    assert r.json()["error"]["current_version"] == str(v3.pk)
    assert RegressionAlert.objects.get().status == AlertStatus.OPEN
