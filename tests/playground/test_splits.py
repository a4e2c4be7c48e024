"""A/B splits on labels: what is refused, how a user key picks (the same on
the server and in the SDK), and that a move ends the split."""

import pytest
from promptyard import split_pick as sdk_pick

from playground import services
from playground.splits import split_pick
from sharing.models import AuditEvent
from tests.factories import PromptFactory, PromptVersionFactory
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db


@pytest.fixture
def versions(prompt):
    v1 = PromptVersionFactory(prompt=prompt, body="A {{x}}")
    v2 = PromptVersionFactory(prompt=prompt, parent=v1, body="B {{x}}")
    v3 = PromptVersionFactory(prompt=prompt, parent=v1, body="C {{x}}")
    return v1, v2, v3


def _split(client, prompt, variants, expected=None, name="production"):
    return client.post(f"/api/prompts/{prompt.pk}/labels/{name}/split",
                       {"variants": variants, "expected": str(expected.pk) if expected else None},
                       format="json")


def test_should_refuse_splits_whose_weights_do_not_add_up_or_name_other_versions(auth_client, prompt,
                                                                                 versions):
    v1, v2, v3 = versions
    other = PromptVersionFactory(prompt=PromptFactory(owner=prompt.owner), body="x")

    def two(w1, w2, second=None):
        return [{"version": str(v1.pk), "weight": w1}, {"version": second or str(v2.pk), "weight": w2}]

    cases = [
        ([{"version": str(v1.pk), "weight": 60}, {"version": str(v2.pk), "weight": 30}], "invalid_weights"),
        ([{"version": str(v1.pk), "weight": 100}, {"version": str(v2.pk), "weight": 0}], "invalid_weights"),
        (two(50.5, 49.5), "invalid_weights"),
        ([{"version": str(v1.pk), "weight": True}, {"version": str(v2.pk), "weight": 99}], "invalid_weights"),
        ([{"version": str(v1.pk), "weight": 100}], "invalid_split"),
        ([{"version": str(v1.pk), "weight": 50}, {"version": str(v1.pk), "weight": 50}], "invalid_split"),
        ([{"version": str(v1.pk), "weight": 50}, {"version": str(v2.pk)}], "invalid_split"),
        ("v1:50,v2:50", "invalid_split"),
        (two(50, 50, str(other.pk)), "version_not_found"),
        ([{"version": str(v1.pk), "weight": 50}, {"version": "nope", "weight": 50}], "version_not_found"),
    ]
    for variants, code in cases:
        response = _split(auth_client, prompt, variants)
        assert response.json()["error"]["code"] == code, variants
        assert response.status_code == (404 if code == "version_not_found" else 400), variants
    ok = [{"version": str(v1.pk), "weight": 70}, {"version": str(v2.pk), "weight": 30}]
    assert _split(auth_client, prompt, ok).status_code == 200
    stale = _split(auth_client, prompt, ok, expected=v3)
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "label_conflict"
    assert _split(auth_client, prompt, ok).status_code == 409  # exists already: expected must name it


def test_should_pick_one_version_per_user_the_same_way_in_the_sdk(auth_client, prompt, versions):
    v1, v2, v3 = versions
    variants = [{"version": str(v1.pk), "weight": 70}, {"version": str(v2.pk), "weight": 30}]
    label = _split(auth_client, prompt, variants).json()
    assert label["version"] == str(v1.pk) and label["split"] == variants
    base = f"/api/prompts/{prompt.pk}/labels/production"
    got = auth_client.get(base).json()
    assert got["version"]["id"] == str(v1.pk)  # no user key: the first variant
    assert [(s["weight"], s["version"]["body"]) for s in got["split"]] == [(70, "A {{x}}"), (30, "B {{x}}")]
    users = [f"user-{i}" for i in range(400)]
    picks = {u: split_pick(variants, prompt_id=prompt.pk, label="production", user=u) for u in users}
    assert all(picks[u] == [str(v1.pk), str(v2.pk)][sdk_pick([70, 30], prompt_id=str(prompt.pk),
                                                              label="production", user=u)] for u in users)
    share = sum(p == str(v1.pk) for p in picks.values()) / len(users)
    assert 0.6 < share < 0.8, share
    for u in users[:5]:
        assert auth_client.get(base, {"user": u}).json()["version"]["id"] == picks[u]
    assert auth_client.get(base, {"user": ""}).json()["error"]["code"] == "invalid_user_key"
    event = AuditEvent.objects.get(action="label.split")
    assert event.detail["variants"] == variants

    moved = auth_client.post(f"{base}/move", {"version": str(v3.pk), "expected": str(v1.pk)}, format="json")
    assert moved.json()["split"] is None
    assert auth_client.get(base, {"user": users[0]}).json()["version"]["id"] == str(v3.pk)


def test_should_tell_webhooks_about_a_split(auth_client, prompt, versions):
    v1, v2, _ = versions
    auth_client.post("/api/webhooks", {"url": "https://93.184.216.34/h", "events": ["label.moved"]},
                     format="json")
    variants = [{"version": str(v1.pk), "weight": 50}, {"version": str(v2.pk), "weight": 50}]
    services.label_split(prompt=prompt, name="beta", variants=variants, expected_version_id=None,
                         actor=prompt.owner)
    import json

    data = json.loads(bytes(WebhookDelivery.objects.get().body))["data"]
    assert (data["kind"], data["variants"], data["to_version"]) == ("split", variants, str(v1.pk))
