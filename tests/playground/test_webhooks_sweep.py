"""The sweep of overdue webhook deliveries: what it takes, that concurrent
sweepers take disjoint rows (SKIP LOCKED, PostgreSQL), that an attempt queued
twice runs once, and the embedded default's sweeping thread, started by
`manage.py serve`'s signal, delivering what a previous process left pending.
Beat's sweep through a broker outage is in test_webhooks_live.py."""

from __future__ import annotations

import datetime
import os
import threading
import uuid

import pytest
from django.db import connection, transaction
from django.utils import timezone

from tests.factories import PromptFactory, UserFactory
from tests.playground.webhook_receiver import Receiver
from tests.polling import wait_for
from webhooks.delivery import Sweeper, attempt_delivery, deliveries_sweep
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import _delivery


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.WEBHOOK_ALLOW_HTTP = True  # the receivers are plain-http local servers
    settings.WEBHOOK_SWEEP_GRACE_S = 60.0
    # A failed attempt's retry is an hour away: no timer or message of it runs during the suite.
    settings.WEBHOOK_BACKOFF_BASE_S = 3600.0
    settings.WEBHOOK_QUEUE = f"webhooks-sweep-test-{os.getpid()}"  # nobody consumes it


def _endpoint(url="http://127.0.0.1:9/hook") -> WebhookEndpoint:
    user = UserFactory()
    return WebhookEndpoint.objects.create(owner=user, prompt=PromptFactory(owner=user), url=url,
                                          events=["version.created"])


def _pending(endpoint, *, due_ago_s: float, **fields) -> WebhookDelivery:
    """A delivery as a process that died left it: pending, its attempt due `due_ago_s` ago, no
    message or timer anywhere."""
    row = _delivery(endpoint=endpoint, event="version.created", event_id=uuid.uuid4(), body=b'{"x":1}')
    WebhookDelivery.objects.filter(pk=row.pk).update(
        next_attempt_at=timezone.now() - datetime.timedelta(seconds=due_ago_s), **fields)
    return row


@pytest.mark.django_db
def test_should_sweep_only_pending_deliveries_overdue_past_the_grace():
    endpoint = _endpoint()
    overdue = _pending(endpoint, due_ago_s=61)
    _pending(endpoint, due_ago_s=30)  # late, but a queued message may still be on its way
    _pending(endpoint, due_ago_s=600, status="failed")
    _pending(endpoint, due_ago_s=600, status="succeeded")
    # (Its schedule() would run on commit: never, in this test's rolled-back transaction.)
    assert deliveries_sweep() == [str(overdue.pk)]
    # Taken: due now, so the next sweep leaves it alone until the grace has passed again.
    assert deliveries_sweep() == []
    assert WebhookDelivery.objects.get(pk=overdue.pk).next_attempt_at > timezone.now() - datetime.timedelta(
        seconds=5)


@pytest.mark.needs_services
def test_should_give_concurrent_sweepers_disjoint_deliveries(transactional_db):
    endpoint = _endpoint()
    rows = {str(_pending(endpoint, due_ago_s=100 + i).pk) for i in range(10)}
    assert connection.features.has_select_for_update_skip_locked
    other: list[str] = []

    def sweep_beside():
        try:
            other.extend(deliveries_sweep())
        finally:
            connection.close()

    with transaction.atomic():  # the first sweeper holds its rows until this commits
        first = deliveries_sweep(limit=4)
        beside = threading.Thread(target=sweep_beside)
        beside.start()
        beside.join()  # SKIP LOCKED: it took the rest without waiting for the first
    assert len(first) == 4 and len(other) == 6
    assert set(first) | set(other) == rows and not set(first) & set(other)
    assert deliveries_sweep() == []  # all taken: due now, none overdue


@pytest.mark.django_db(transaction=True)
def test_should_attempt_once_when_an_attempt_is_queued_twice():
    receiver = Receiver(statuses=[503])
    try:
        row = _pending(_endpoint(receiver.url), due_ago_s=0)
        assert attempt_delivery(row.pk) == "pending"  # 503: retried in an hour
        assert attempt_delivery(row.pk) == "pending"  # a second message: not due, nothing sent
        assert len(receiver.received) == 1
        assert WebhookDelivery.objects.get(pk=row.pk).attempts == 1
    finally:
        receiver.close()


def test_should_deliver_what_a_previous_embedded_process_left_pending(transactional_db, settings):
    if settings.CELERY_BROKER_URL:
        pytest.skip("embedded default only: with a broker, beat sends the sweep (test_webhooks_live.py)")
    from core.startup import serving

    receiver = Receiver()
    try:
        row = _pending(_endpoint(receiver.url), due_ago_s=120, attempts=1, last_error="HTTP 503")
        # What `manage.py serve` does before it serves; the receiver returns the thread it started.
        started = [thread for _, thread in serving.send(sender=None) if thread is not None]
        assert len([s for s in started if isinstance(s, Sweeper)]) == 1
        try:
            done = wait_for(lambda: WebhookDelivery.objects.filter(pk=row.pk, status="succeeded").first(),
                            timeout=30, what="the left-over delivery")
        finally:
            for thread in started:  # the sweeper, and the other apps' threads (the regression check)
                thread.stop()
        assert (done.attempts, done.response_code) == (2, 200)
        assert [got["body"] for got in receiver.received] == [b'{"x":1}']
    finally:
        receiver.close()
