"""The regression check's thread (the embedded default has no beat): started by
the serving signal when there is no broker, it raises the alert of a label
moved onto a slower version on its own, on the database the requests use."""

import datetime

import pytest
from django.utils import timezone

from core.startup import serving
from generations.checker import RegressionChecker
from generations.models import RegressionAlert
from generations.store import generations_store
from playground import services as playground_services
from playground.models import LabelMove
from tests.factories import PromptFactory, PromptVersionFactory, UserFactory
from tests.generations.conftest import entry
from tests.polling import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_thread_raises_the_alert_of_a_slower_version(settings):
    settings.REGRESSION_MIN_SAMPLES = 20
    owner = UserFactory()
    prompt = PromptFactory(owner=owner)
    v1 = PromptVersionFactory(prompt=prompt, body="Hello {{name}}!")
    v2 = PromptVersionFactory(prompt=prompt, parent=v1, body="Hi {{name}}!")
    for version, expected in ((v1, None), (v2, v1.pk)):
        playground_services.label_move(prompt=prompt, name="production", version_id=version.pk,
                                       expected_version_id=expected, actor=owner)
    # The move an hour ago: v1's generations in the hour before it, v2's since.
    moved_at = timezone.now() - datetime.timedelta(hours=1)
    LabelMove.objects.filter(to_version=v2).update(created_at=moved_at)
    start = moved_at.timestamp()
    generations_store([entry(v1, owner, label="production", latency_ms=100 + i, at=start - 60 * (i + 1))
                       for i in range(30)]
                      + [entry(v2, owner, label="production", latency_ms=300 + i, at=start + 60 * (i + 1))
                         for i in range(30)])
    checker = RegressionChecker(interval=0.05).start()
    try:
        alert = wait_for(lambda: RegressionAlert.objects.filter(rule="latency_p95").first(),
                         what="the alert the thread raises")
    finally:
        checker.stop()
    assert (alert.version_id, alert.previous_version_id, alert.count) == (v2.pk, v1.pk, 30)


def test_serving_starts_the_thread_only_without_a_broker(settings):
    started = [thread for _, thread in serving.send(sender=None) if thread is not None]
    try:
        checkers = [t for t in started if isinstance(t, RegressionChecker)]
        assert len(checkers) == (0 if settings.CELERY_BROKER_URL else 1)
    finally:
        for thread in started:
            thread.stop()
