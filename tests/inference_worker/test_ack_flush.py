"""config/celery.py's AckFlush: a repeating wake-up of the worker's event loop, so late
acks queued from pool threads go out within CELERY_ACK_FLUSH_MS (bench/acks.py measures it)."""

import types

import pytest
from kombu.asynchronous import Hub

from config.celery import AckFlush, app

pytestmark = pytest.mark.any_profile


def test_the_step_is_part_of_every_workers_consumer():
    assert AckFlush in app.steps["consumer"]


def test_it_keeps_a_timer_on_the_hub_while_started(settings):
    settings.CELERY_ACK_FLUSH_MS = 5
    hub = Hub()
    consumer = types.SimpleNamespace(hub=hub)
    step = AckFlush(consumer)
    step.start(consumer)
    assert len(hub.timer.queue) == 1
    # The event loop polls for as long as fire_timers says: 5 ms at most, not 1 s.
    assert 0 < hub.fire_timers() <= 0.005
    step.stop(consumer)
    assert step.timer.canceled


def test_zero_leaves_celerys_own_behaviour(settings):
    settings.CELERY_ACK_FLUSH_MS = 0
    hub = Hub()
    consumer = types.SimpleNamespace(hub=hub)
    AckFlush(consumer).start(consumer)
    assert not hub.timer.queue and hub.fire_timers() == 1
