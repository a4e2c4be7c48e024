"""config/celery.py's AckWake: a callback queued for the worker's event loop from
another thread (a late ack from a pool thread) wakes the loop's poll at once, instead
of waiting for the next message or the 1 s idle poll (bench/acks.py measures it)."""

import threading
import types

import pytest
from kombu.asynchronous import Hub

from config.celery import AckWake, app

pytestmark = pytest.mark.any_profile


def _started(settings, wake: bool = True) -> tuple[Hub, types.SimpleNamespace, AckWake]:
    settings.CELERY_ACK_WAKE = wake
    hub = Hub()
    consumer = types.SimpleNamespace(hub=hub)
    step = AckWake(consumer)
    step.start(consumer)
    return hub, consumer, step


def _queue_from_a_thread(hub: Hub, callback) -> None:
    thread = threading.Thread(target=hub.call_soon, args=(callback,))
    thread.start()
    thread.join()


def _ready_fds(hub: Hub) -> list[int]:
    return [fd for fd, _ in hub.poller.poll(0) or ()]


def test_the_step_is_part_of_every_workers_consumer():
    assert AckWake in app.steps["consumer"]


def test_a_callback_queued_from_another_thread_makes_the_loop_poll_return(settings):
    hub, consumer, step = _started(settings)
    try:
        assert _ready_fds(hub) == []  # nothing queued: the loop would sleep
        ran = []
        _queue_from_a_thread(hub, lambda: ran.append(1))
        _queue_from_a_thread(hub, lambda: ran.append(2))
        assert _ready_fds(hub) == [step._read]
        assert len(hub.readers) == 1
        # One wake-up for both: the loop drains the pipe, then runs what is queued.
        callback, args = hub.readers[step._read]
        callback(*args)
        assert _ready_fds(hub) == []
        for item in hub._pop_ready():
            item()
        assert sorted(ran) == [1, 2]  # the hub keeps its ready callbacks in a set
        # And the next one wakes it again.
        _queue_from_a_thread(hub, lambda: ran.append(3))
        assert _ready_fds(hub) == [step._read]
    finally:
        step.stop(consumer)
    assert "call_soon" not in vars(hub) and not hub.readers


def test_off_leaves_celerys_own_behaviour(settings):
    hub, consumer, step = _started(settings, wake=False)
    _queue_from_a_thread(hub, lambda: None)
    assert not hub.readers and "call_soon" not in vars(hub)
    step.stop(consumer)
