"""batchstring and the scheduler thread, on real time with a fast engine."""

from __future__ import annotations

import collections
import threading
import time

import pytest

from inference_worker.batchstring import BatchStringError, batchstring
from inference_worker.engines.base import SamplingParams, Sequence
from inference_worker.engines.fixed_cost import FixedCostEngine
from inference_worker.scheduler import RequestFailed, Scheduler

# Touches no part the two profiles differ in: runs once, in the services pass.
pytestmark = pytest.mark.any_profile


class GatedSleep:
    """A device call that lasts until the test opens the gate (first call only)."""

    def __init__(self):
        self.gate = threading.Event()
        self.in_call = threading.Event()
        self.first = True

    def __call__(self, seconds):
        if self.first:
            self.first = False
            self.in_call.set()
            assert self.gate.wait(10)


def wait_for(predicate, timeout=5.0):
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "condition not reached"
        time.sleep(0.001)


@pytest.fixture
def running():
    started = []

    def make(engine, **kw):
        sched = Scheduler(engine, **kw).start()
        started.append(sched)
        return sched

    yield make
    for sched in started:
        sched.stop(timeout=5)


def test_batchstring_outputs_in_order(running):
    sched = running(FixedCostEngine(max_inputs=4, call_s=0.001))
    items = [f"item-{i}" for i in range(10)]
    assert batchstring(items, scheduler=sched) == [s[::-1] for s in items]


def test_items_of_concurrent_calls_share_one_batch(running):
    sleep = GatedSleep()
    engine = FixedCostEngine(max_inputs=50, call_s=0.001, sleep=sleep)
    sched = running(engine)
    blocker = sched.submit(Sequence(id="blocker", messages=[{"role": "user", "content": "b"}]))
    assert sleep.in_call.wait(5)                  # the device is busy with the blocker
    out: dict[str, list[str]] = {}
    calls = [threading.Thread(target=lambda k=k: out.__setitem__(
        k, batchstring([f"{k}{i}" for i in range(3)], scheduler=sched))) for k in "xy"]
    for t in calls:
        t.start()
    wait_for(lambda: sched.stats().queue_length == 6)
    sleep.gate.set()
    for t in calls:
        t.join(5)
    assert blocker.result(5).text == "b"
    assert out == {"x": ["0x", "1x", "2x"], "y": ["0y", "1y", "2y"]}
    assert engine.batch_sizes == [1, 6]           # both calls' items in one device call


def test_streaming_callbacks_on_scheduler_thread(running):
    sched = running(FixedCostEngine(call_s=0.001))
    tokens, done = [], threading.Event()
    h = sched.submit(Sequence(id="s", messages=[{"role": "user", "content": "hello"}],
                              params=SamplingParams(max_tokens=3)),
                     on_token=tokens.append, on_done=lambda r: done.set())
    result = h.result(5)
    assert done.is_set() and tokens == ["oll"]
    assert (result.text, result.finish_reason, result.completion_tokens) == ("oll", "length", 3)


def test_result_timeout_then_cancel(running):
    sleep = GatedSleep()
    sched = running(FixedCostEngine(max_inputs=1, call_s=0.001, sleep=sleep))
    sched.submit(Sequence(id="a", messages=[{"role": "user", "content": "a"}]))
    assert sleep.in_call.wait(5)
    b = sched.submit(Sequence(id="b", messages=[{"role": "user", "content": "b"}]))
    with pytest.raises(TimeoutError):
        b.result(0.01)
    assert b.cancel()
    sleep.gate.set()
    with pytest.raises(RequestFailed) as exc:
        b.result(5)
    assert exc.value.code == "cancelled"


@pytest.mark.parametrize("items, code", [
    ([], "empty_input"),
    ("abc", "invalid_input"),
    (["ok", ""], "empty_input"),
    (["x" * 5000], "context_length_exceeded"),
    (["a"] * 1001, "too_many_items"),
])
def test_bad_batchstring_input_fails_before_the_device(running, items, code):
    engine = FixedCostEngine(call_s=0.001)
    sched = running(engine)
    with pytest.raises(BatchStringError) as exc:
        batchstring(items, scheduler=sched)
    assert exc.value.code == code
    assert engine.calls == 0 and sched.stats().queue_length == 0


def test_failing_item_names_its_index(running):
    engine = FixedCostEngine(call_s=0.001, fail_if=lambda s: s.messages[-1]["content"] == "bad")
    sched = running(engine)
    with pytest.raises(BatchStringError) as exc:
        batchstring(["a", "b", "bad", "c"], scheduler=sched)
    assert (exc.value.index, exc.value.item_code) == (2, "device_error")
    # The good items of a failed call still ran fine for everyone else's sake.
    assert batchstring(["a", "b"], scheduler=sched) == ["a", "b"]


def test_concurrent_submitters_and_cancels_all_resolve(running):
    # Many task threads at once, some cancelling: every handle ends exactly once.
    engine = FixedCostEngine(max_inputs=8, call_s=0.0005)
    sched = running(engine)
    handles, lock = [], threading.Lock()

    def client(k):
        for i in range(40):
            h = sched.submit(Sequence(id=f"{k}-{i}", messages=[{"role": "user", "content": "ab"}]),
                             "free" if i % 2 else "paid")
            if i % 7 == 0:
                h.cancel()
            with lock:
                handles.append(h)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    outcomes = collections.Counter()
    for h in handles:
        try:
            outcomes[h.result(10).text] += 1
        except RequestFailed as exc:
            outcomes[exc.code] += 1
    assert sum(outcomes.values()) == 320 and set(outcomes) <= {"ba", "cancelled"}
    assert outcomes["ba"] >= 320 - 8 * 6           # only the cancelled ones failed
    stats = sched.stats()
    assert stats.completed + stats.cancelled == 320 and stats.running == 0
