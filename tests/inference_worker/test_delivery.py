"""A running scheduler delivers a call's outcomes on a thread of its own
(inference_worker.delivery): the device's next call does not wait for them."""

from __future__ import annotations

import contextlib
import threading

import pytest

from inference_worker.delivery import Deliverer
from inference_worker.engines.base import SamplingParams, Sequence
from inference_worker.engines.fixed_cost import FixedCostEngine
from inference_worker.requests import Priority, RequestHandle
from inference_worker.scheduler import Scheduler
from tests.polling import wait_for

pytestmark = pytest.mark.any_profile


def seq(sid: str) -> Sequence:
    return Sequence(id=sid, messages=[{"role": "user", "content": sid}], params=SamplingParams(max_tokens=8))


def test_the_next_call_starts_while_the_last_calls_events_are_still_being_delivered():
    calls_started = [threading.Event(), threading.Event()]
    calls = []

    def device(seconds: float) -> None:  # the fixed-cost engine's call: instant, counted
        calls_started[len(calls)].set()
        calls.append(seconds)

    delivered_during_the_second_call = []

    class Deliver:
        """The worker's Redis writes, held until the device has started its next call."""

        def __enter__(self):
            delivered_during_the_second_call.append(calls_started[1].wait(10))

        def __exit__(self, *exc):
            return False

    sched = Scheduler(FixedCostEngine(max_inputs=4, call_s=0, sleep=device), deliver=Deliver).start()
    try:
        first = sched.submit(seq("a"))
        assert calls_started[0].wait(10)
        second = sched.submit(seq("b"))  # after the first call was sealed: it joins the second
        assert first.result(10).text == "a"
        assert second.result(10).text == "b"
    finally:
        sched.stop()
    assert len(calls) == 2
    # Inline delivery would have held the scheduler's thread, so the second call
    # could not start while the first call's events waited for it.
    assert delivered_during_the_second_call[0] is True


def test_stop_returns_once_every_waiter_has_heard():
    call_started, gate = threading.Event(), threading.Event()

    def device(seconds: float) -> None:
        call_started.set()
        assert gate.wait(10)

    sched = Scheduler(FixedCostEngine(max_inputs=1, call_s=0, sleep=device)).start()
    running, waiting = sched.submit(seq("a")), sched.submit(seq("b"))  # one input per call: b waits
    assert call_started.wait(10)
    stopper = threading.Thread(target=sched.stop)
    stopper.start()
    wait_for(lambda: sched._stopping, timeout=10, what="the stop")
    gate.set()  # the running call ends after the stop began: b never runs
    stopper.join(10)
    assert not stopper.is_alive()
    assert running.done() and running.result(0).text == "a"
    assert waiting.done() and waiting.error.code == "scheduler_stopped"


def test_outcomes_handed_over_after_the_delivery_thread_ended_are_delivered_inline():
    # A scheduler thread that outlived stop()'s timeout (a hung call) finishes later.
    deliverer = Deliverer(lambda: contextlib.nullcontext, "test")
    deliverer.close(10)
    heard = []
    handle = RequestHandle(lambda h, reason: False, seq("a"), Priority.PAID, deadline=None, submitted_at=0.0,
                           order=0, on_token=None, on_done=None, on_error=None)
    deliverer.put([(handle, lambda: heard.append("a"), False)])
    assert heard == ["a"]
