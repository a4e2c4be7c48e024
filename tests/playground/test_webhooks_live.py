"""Webhook deliveries for real: a real HTTP receiver in this process, and the
attempts run by a Celery worker on its own webhooks queue (services pass) or
by the serving process's timer threads (embedded pass, no broker). Retries
back off exponentially (0.2 s base here), a failing endpoint ends as failed
after its last attempt, a redelivery goes out again."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.db import connection

from playground import services
from playground.webhooks.models import WebhookDelivery
from tests.factories import PromptFactory, UserFactory
from tests.livesubprocess import ROOT, free_port
from tests.playground.webhook_receiver import Receiver, readme_verifier
from tests.polling import wait_for

QUEUE = f"webhooks-test-{os.getpid()}"
WEBHOOK_SETTINGS = {"WEBHOOK_QUEUE": QUEUE, "WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32",
                    "WEBHOOK_MAX_ATTEMPTS": "3", "WEBHOOK_BACKOFF_BASE_S": "0.2", "WEBHOOK_TIMEOUT_S": "2"}


@pytest.fixture(scope="module")
def webhook_worker(django_db_setup, django_db_blocker):
    from django.conf import settings

    if not settings.CELERY_BROKER_URL:
        yield None  # embedded default: deliveries run on threads of this process
        return
    with django_db_blocker.unblock():
        db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", QUEUE, "-P", "threads", "-c", "4",
         "-l", "warning", "-n", f"{QUEUE}@%h"],
        cwd=ROOT, env=dict(os.environ, DATABASE_URL=url, **WEBHOOK_SETTINGS),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    yield proc  # messages wait in the queue (declared on publish) until the worker consumes
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def live(webhook_worker, transactional_db, settings):
    settings.WEBHOOK_QUEUE = QUEUE
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.WEBHOOK_MAX_ATTEMPTS = 3
    settings.WEBHOOK_BACKOFF_BASE_S = 0.2
    settings.WEBHOOK_TIMEOUT_S = 2.0
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # ~0.5 s a user otherwise


def _finished(delivery_id):
    def check():
        row = WebhookDelivery.objects.get(pk=delivery_id)
        return row if row.status != "pending" else None
    return check


def test_should_deliver_signed_events_retry_with_backoff_and_keep_the_old_signature_after_rotation(live):
    from playground.webhooks.services import endpoint_create, endpoint_secret_rotate

    verify = readme_verifier()
    user = UserFactory()
    prompt = PromptFactory(owner=user)
    endpoint = endpoint_create(owner=user, url=live.url, events=["version.created", "label.moved"],
                               prompt=prompt)
    old_secret = endpoint.secret
    live.script(500, 502, 200)
    v1 = services.version_create(prompt=prompt, author=user, body="Hi {{name}}")
    first = WebhookDelivery.objects.get()
    endpoint_secret_rotate(endpoint=endpoint)  # while the delivery is pending

    done = wait_for(_finished(first.pk), timeout=30, what="the first delivery to end")
    assert (done.status, done.attempts, done.response_code, done.last_error) == ("succeeded", 3, 200, "")
    assert len(live.received) == 3
    gaps = [b["at"] - a["at"] for a, b in zip(live.received, live.received[1:], strict=False)]
    assert gaps[0] >= 0.15 and gaps[1] >= 0.35, gaps  # 0.2 s, then 0.4 s
    for got in live.received:
        assert got["body"] == bytes(first.body) and got["path"] == "/hook"
        assert got["headers"]["Promptyard-Event"] == "version.created"
        assert got["headers"]["Promptyard-Delivery"] == str(first.pk)
        assert verify(old_secret, got["headers"], got["body"])  # signed before the rotation
        assert not verify(endpoint.secret, got["headers"], got["body"])
    event = json.loads(live.received[0]["body"])
    assert event["type"] == "version.created" and event["data"]["version"]["id"] == str(v1.pk)

    live.script(200)
    services.label_move(prompt=prompt, name="production", version_id=v1.pk, expected_version_id=None,
                        actor=user)
    moved = WebhookDelivery.objects.get(event="label.moved")
    assert wait_for(_finished(moved.pk), timeout=30, what="the label delivery").status == "succeeded"
    assert verify(endpoint.secret, live.received[-1]["headers"], live.received[-1]["body"])


def test_should_end_as_failed_after_the_last_retry_and_go_out_again_when_redelivered(live):
    from playground.webhooks.services import delivery_redeliver, endpoint_create

    user = UserFactory()
    prompt = PromptFactory(owner=user)
    live.script(503)
    failing = endpoint_create(owner=user, url=live.url, events=["version.created"], prompt=prompt)
    closed = endpoint_create(owner=user, url=f"http://127.0.0.1:{free_port()}/nobody",
                             events=["version.created"], prompt=prompt)
    services.version_create(prompt=prompt, author=user, body="x")
    rows = {d.endpoint_id: d for d in WebhookDelivery.objects.all()}
    bad = wait_for(_finished(rows[failing.pk].pk), timeout=30, what="the failing delivery to give up")
    assert (bad.status, bad.attempts, bad.response_code, bad.last_error) == ("failed", 3, 503, "HTTP 503")
    assert bad.finished_at is not None and len(live.received) == 3
    refused = wait_for(_finished(rows[closed.pk].pk), timeout=30, what="the refused delivery to give up")
    assert (refused.status, refused.attempts, refused.response_code) == ("failed", 3, None)
    assert "ConnectError" in refused.last_error

    live.script(200)
    again = delivery_redeliver(delivery=bad)
    ok = wait_for(_finished(again.pk), timeout=30, what="the redelivery")
    assert (ok.status, ok.attempts, ok.response_code) == ("succeeded", 1, 200)
    assert live.received[-1]["body"] == bytes(bad.body)
    assert json.loads(live.received[-1]["body"])["id"] == str(bad.event_id)


def test_should_refuse_at_delivery_time_an_address_no_longer_allowed(live, settings):
    from playground.webhooks.services import endpoint_create

    user = UserFactory()
    prompt = PromptFactory(owner=user)
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]  # at registration only
    endpoint = endpoint_create(owner=user, url=live.url.replace("127.0.0.1", "127.0.0.2"),
                               events=["version.created"], prompt=prompt)
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]  # what the worker (or this process) allows now
    services.version_create(prompt=prompt, author=user, body="x")
    row = wait_for(_finished(WebhookDelivery.objects.get(endpoint=endpoint).pk), timeout=30,
                   what="the refused delivery")
    assert (row.status, row.attempts, row.response_code) == ("failed", 3, None)
    assert "inside the network" in row.last_error and live.received == []
