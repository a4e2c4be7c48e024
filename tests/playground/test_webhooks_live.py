"""Webhook deliveries for real: a real HTTP receiver in this process, and the
attempts run by a Celery worker on its own webhooks queue, with `celery beat`
sending the sweep (services pass), or by the serving process's timer threads
(embedded pass, no broker). Retries back off exponentially (0.2 s base here), a
failing endpoint ends as failed after its last attempt, a redelivery goes out
again, and an event written while the broker is away is delivered once it is back.

With services, this process, the worker and beat all reach RabbitMQ through one
TCP proxy, which the outage test cuts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest
from django.db import connection

from playground import services
from tests.factories import PromptFactory, UserFactory
from tests.livesubprocess import ROOT, free_port
from tests.playground.webhook_receiver import Receiver, readme_verifier
from tests.polling import wait_for
from tests.tcpproxy import TcpProxy
from webhooks.models import WebhookDelivery

QUEUE = f"webhooks-test-{os.getpid()}"
# A sweep every 0.3 s takes what is 1 s overdue (production: 30 s and 60 s).
WEBHOOK_SETTINGS = {"WEBHOOK_QUEUE": QUEUE, "WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32",
                    "WEBHOOK_ALLOW_HTTP": "true",
                    "WEBHOOK_MAX_ATTEMPTS": "3", "WEBHOOK_BACKOFF_BASE_S": "0.2", "WEBHOOK_TIMEOUT_S": "2",
                    "WEBHOOK_SWEEP_INTERVAL_S": "0.3", "WEBHOOK_SWEEP_GRACE_S": "1"}


@contextmanager
def _publishing_to(url: str):
    """This process's Celery app publishing to `url`: its publishing URL (broker_url
    yields to the CELERY_BROKER_URL variable), and its connection pools, which are
    looked up per URL (dropping the app's handles makes the next publish take the new one's)."""
    from config.celery import app

    def point(to):
        app.conf.broker_write_url = to
        app._pool = None
        app.amqp._producer_pool = None

    before = app.conf.get("broker_write_url")
    point(url)
    try:
        yield
    finally:
        point(before)


@pytest.fixture(scope="module")
def broker(django_db_setup, django_db_blocker, tmp_path_factory):
    """The broker as this module's processes see it (a TcpProxy to cut), with a
    webhooks worker and beat behind it; None on the embedded default (deliveries
    run on threads of this process)."""
    from django.conf import settings

    if not settings.CELERY_BROKER_URL:
        yield None
        return
    with django_db_blocker.unblock():
        db = connection.settings_dict
    real = urlsplit(settings.CELERY_BROKER_URL)
    proxy = TcpProxy(real.hostname, real.port or 5672)
    url = real._replace(netloc=f"{real.netloc.rsplit('@', 1)[0]}@127.0.0.1:{proxy.port}").geturl()
    env = dict(os.environ, DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
               CELERY_BROKER_URL=url, **WEBHOOK_SETTINGS)
    schedule = tmp_path_factory.mktemp("beat") / "schedule"
    procs = [subprocess.Popen([sys.executable, "-m", "celery", "-A", "config", *args], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for args in (["worker", "-Q", QUEUE, "-P", "threads", "-c", "4", "-l", "warning",
                           "-n", f"{QUEUE}@%h"],
                          ["beat", "-s", str(schedule), "-l", "warning"])]
    try:
        with _publishing_to(url):
            yield proxy  # messages wait in the queue (declared on publish) until the worker consumes
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        proxy.close()


@pytest.fixture
def live(broker, transactional_db, settings):
    settings.WEBHOOK_QUEUE = QUEUE
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.WEBHOOK_ALLOW_HTTP = True  # the receiver is a plain-http local server
    settings.WEBHOOK_MAX_ATTEMPTS = 3
    settings.WEBHOOK_BACKOFF_BASE_S = 0.2
    settings.WEBHOOK_TIMEOUT_S = 2.0
    settings.WEBHOOK_SWEEP_GRACE_S = 1.0
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


def test_should_deliver_signed_events_retry_with_backoff_and_sign_each_attempt_when_sent(live):
    from webhooks.services import endpoint_create, endpoint_secret_rotate

    verify = readme_verifier()
    user = UserFactory()
    prompt = PromptFactory(owner=user)
    endpoint = endpoint_create(owner=user, url=live.url, events=["version.created", "label.moved"],
                               prompt=prompt)
    old_secret = endpoint.secret
    live.script(500, 502, 200)
    v1 = services.version_create(prompt=prompt, author=user, body="Hi {{name}}")
    first = WebhookDelivery.objects.get()
    endpoint_secret_rotate(endpoint=endpoint)  # while the delivery is pending: retries take the new secret

    done = wait_for(_finished(first.pk), timeout=30, what="the first delivery to end")
    assert (done.status, done.attempts, done.response_code, done.last_error) == ("succeeded", 3, 200, "")
    assert len(live.received) == 3
    gaps = [b["at"] - a["at"] for a, b in zip(live.received, live.received[1:], strict=False)]
    assert gaps[0] >= 0.15 and gaps[1] >= 0.35, gaps  # 0.2 s, then 0.4 s
    for i, got in enumerate(live.received):
        assert got["body"] == bytes(first.body) and got["path"] == "/hook"
        assert got["headers"]["Promptyard-Event"] == "version.created"
        assert got["headers"]["Promptyard-Delivery"] == str(first.pk)
        assert abs(int(got["headers"]["Promptyard-Timestamp"]) - got["wall"]) <= 2  # signed when sent
        # The first attempt may have gone out before the rotation; the retries came after it.
        assert verify(endpoint.secret, got["headers"], got["body"]) or (
            i == 0 and verify(old_secret, got["headers"], got["body"]))
        assert not verify("whsec_wrong", got["headers"], got["body"])
    assert (done.timestamp, done.signature) == (int(live.received[-1]["headers"]["Promptyard-Timestamp"]),
                                                live.received[-1]["headers"]["Promptyard-Signature"])
    event = json.loads(live.received[0]["body"])
    assert event["type"] == "version.created" and event["data"]["version"]["id"] == str(v1.pk)

    live.script(200)
    services.label_move(prompt=prompt, name="production", version_id=v1.pk, expected_version_id=None,
                        actor=user)
    moved = WebhookDelivery.objects.get(event="label.moved")
    assert wait_for(_finished(moved.pk), timeout=30, what="the label delivery").status == "succeeded"
    assert verify(endpoint.secret, live.received[-1]["headers"], live.received[-1]["body"])


def test_should_end_as_failed_after_the_last_retry_and_go_out_again_when_redelivered(live):
    from webhooks.services import delivery_redeliver, endpoint_create

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
    from webhooks.services import endpoint_create

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


@pytest.mark.needs_services
def test_should_deliver_an_event_written_while_the_broker_was_away_once_it_is_back(live, broker):
    from webhooks.services import endpoint_create

    user = UserFactory()
    prompt = PromptFactory(owner=user)
    endpoint_create(owner=user, url=live.url, events=["version.created"], prompt=prompt)
    broker.cut()  # this process, the worker and beat lose RabbitMQ
    try:
        services.version_create(prompt=prompt, author=user, body="written while the broker is away")
        row = WebhookDelivery.objects.get()
        # The change committed with its delivery; queuing the attempt failed, and says so.
        assert (row.status, row.attempts, live.received) == ("pending", 0, [])
        assert row.last_error.startswith("not queued:"), row.last_error
    finally:
        broker.restore()
    # Nothing re-queues it but beat's sweep, once the broker is back.
    done = wait_for(_finished(row.pk), timeout=60, what="the delivery after the broker came back")
    assert (done.status, done.attempts, done.response_code, done.last_error) == ("succeeded", 1, 200, "")
    assert [got["body"] for got in live.received] == [bytes(row.body)]
