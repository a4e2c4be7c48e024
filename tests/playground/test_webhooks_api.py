"""Webhook endpoints by API and page: what is refused (bad URLs, addresses
inside the network, bad events, someone else's prompt or endpoint), and the
delivery rows that prompt changes write (signed, in the change's transaction).
No attempt runs here (on_commit does not fire in these tests): the live
deliveries are in test_webhooks_live.py."""

import json

import pytest

from playground import services
from sharing.models import Grant, GrantRole
from tests.factories import PromptFactory, UserFactory
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db
PUBLIC = "https://93.184.216.34/hooks"  # an IP literal: no DNS needed to accept it
ALL = ["version.created", "label.moved", "share.created", "share.revoked", "version.regressed"]


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # ~0.5 s a user otherwise


def _create(client, **body):
    return client.post("/api/webhooks", {"url": PUBLIC, "events": ALL, **body}, format="json")


def test_should_refuse_urls_that_do_not_parse_or_point_inside_the_network(auth_client):
    cases = {
        "ftp://93.184.216.34/x": "invalid_webhook_url", "not a url": "invalid_webhook_url",
        "https://": "invalid_webhook_url", "": "invalid_webhook_url",
        "https://93.184.216.34:99999/": "invalid_webhook_url",
        "https://user:pw@93.184.216.34/": "invalid_webhook_url",
        "https://93.184.216.34/a b": "invalid_webhook_url",
        "http://93.184.216.34/h": "invalid_webhook_url",  # plain http: WEBHOOK_ALLOW_HTTP only
        "https://127.0.0.1:8000/h": "webhook_url_forbidden", "https://localhost/h": "webhook_url_forbidden",
        "https://10.1.2.3/h": "webhook_url_forbidden", "https://192.168.0.10/h": "webhook_url_forbidden",
        "https://169.254.169.254/latest/meta-data": "webhook_url_forbidden",
        "https://[::1]/h": "webhook_url_forbidden", "https://[::ffff:127.0.0.1]/h": "webhook_url_forbidden",
        "https://0.0.0.0/h": "webhook_url_forbidden", "https://100.64.0.1/h": "webhook_url_forbidden",
        "https://no-such-host.invalid/h": "webhook_host_unresolvable",
        "x" * 2001: "invalid_webhook_url",
    }
    for url, code in cases.items():
        response = _create(auth_client, url=url)
        assert response.status_code == 400, (url, response.content)
        error = response.json()["error"]
        assert (error["code"], error["field"]) == (code, "url"), url
    for events in ([], ["version.created", "nope"], "version.created", [1]):
        error = _create(auth_client, events=events).json()["error"]
        assert (error["code"], error["field"]) == ("invalid_events", "events"), events


def test_should_let_the_allow_list_admit_a_private_network(auth_client, settings):
    assert _create(auth_client, url="https://10.1.2.3/h").status_code == 400
    settings.WEBHOOK_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    assert _create(auth_client, url="https://10.1.2.3/h").status_code == 201


def test_should_keep_endpoints_to_their_owner(auth_client, api_client, user):
    other = UserFactory()
    theirs = PromptFactory(owner=other)
    assert _create(auth_client, prompt=str(theirs.pk)).status_code == 404  # a stranger's prompt
    Grant.objects.create(prompt=theirs, user=user, role=GrantRole.EDITOR, created_by=other)
    assert _create(auth_client, prompt=str(theirs.pk)).json()["error"]["code"] == "forbidden"
    created = _create(auth_client)
    assert created.status_code == 201 and created.json()["secret"].startswith("whsec_")
    endpoint = created.json()["id"]
    listed = auth_client.get("/api/webhooks").json()["results"]
    assert [e["id"] for e in listed] == [endpoint] and "secret" not in listed[0]
    api_client.force_login(other)
    for method, path in (("get", ""), ("delete", ""), ("get", "/deliveries"), ("post", "/rotate-secret")):
        response = getattr(api_client, method)(f"/api/webhooks/{endpoint}{path}")
        assert (response.status_code, response.json()["error"]["code"]) == (404, "webhook_not_found")
    assert auth_client.get(f"/api/webhooks/{endpoint}").status_code == 200


def test_should_write_one_delivery_per_subscribed_endpoint_of_the_owner(auth_client, user):
    prompt, elsewhere = PromptFactory(owner=user), PromptFactory(owner=user)
    everything = _create(auth_client).json()
    versions_only = _create(auth_client, events=["version.created"], prompt=str(prompt.pk)).json()
    stranger = UserFactory()
    services.version_create(prompt=PromptFactory(owner=stranger), author=stranger, body="x")  # not ours

    v1 = services.version_create(prompt=prompt, author=user, body="Hi {{name}}", message="first")
    services.label_move(prompt=prompt, name="production", version_id=v1.pk, expected_version_id=None,
                        actor=user)
    services.version_create(prompt=elsewhere, author=user, body="other")
    rows = list(WebhookDelivery.objects.order_by("created_at", "event"))
    got = sorted((str(r.endpoint_id), r.event, json.loads(bytes(r.body))["prompt"]["id"]) for r in rows)
    assert got == sorted([
        (everything["id"], "version.created", str(prompt.pk)),
        (versions_only["id"], "version.created", str(prompt.pk)),
        (everything["id"], "label.moved", str(prompt.pk)),
        (everything["id"], "version.created", str(elsewhere.pk))])
    for row in rows:  # each attempt signs when it sends (test_webhooks_live.py)
        assert (row.status, row.attempts, row.signature) == ("pending", 0, "")
    moved = json.loads(bytes(next(r for r in rows if r.event == "label.moved").body))
    assert moved["data"] == {"label": "production", "kind": "move", "from_version": None,
                             "to_version": str(v1.pk), "actor": user.username}
    same_event = [r for r in rows if r.event == "version.created" and
                  json.loads(bytes(r.body))["prompt"]["id"] == str(prompt.pk)]
    assert len({r.event_id for r in same_event}) == 1  # one event, two endpoints

    rotated = auth_client.post(f"/api/webhooks/{everything['id']}/rotate-secret").json()
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != everything["secret"]
    link = auth_client.post(f"/api/prompts/{prompt.pk}/links", {"mode": "public"}, format="json")
    assert link.status_code == 201 and WebhookDelivery.objects.filter(event="share.created").count() == 1


def test_should_show_the_delivery_log_with_a_redeliver_button_on_the_page(auth_client, user):
    prompt = PromptFactory(owner=user)
    endpoint = _create(auth_client, prompt=str(prompt.pk)).json()
    services.version_create(prompt=prompt, author=user, body="x")
    delivery = WebhookDelivery.objects.get()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status="failed", attempts=6, response_code=503,
                                                          last_error="HTTP 503")
    page = auth_client.get("/settings/webhooks/").content.decode()
    assert f'data-delivery="{delivery.pk}" data-status="failed"' in page
    assert "503" in page and ">6<" in page and "Redeliver" in page
    redeliver = f"/settings/webhooks/{endpoint['id']}/deliveries/{delivery.pk}/redeliver"
    assert auth_client.post(redeliver).status_code == 302
    again = WebhookDelivery.objects.exclude(pk=delivery.pk).get()
    assert (again.redelivery_of_id, again.event_id, bytes(again.body)) == (
        delivery.pk, delivery.event_id, bytes(delivery.body))
    assert again.status == "pending" and again.attempts == 0
    api = auth_client.get(f"/api/webhooks/{endpoint['id']}/deliveries").json()["results"]
    assert {d["id"] for d in api} == {str(delivery.pk), str(again.pk)}
    refused = auth_client.post("/settings/webhooks/new", {"url": "https://127.0.0.1/x", "events": ALL},
                               format="multipart")  # the page's form
    assert refused.status_code == 302
    assert "inside the network" in auth_client.get("/settings/webhooks/").content.decode()
