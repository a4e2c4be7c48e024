"""Scheduler tests on virtual time: run_once is driven by hand, no sleeps."""

from __future__ import annotations

import pytest

from inference_worker.clock import VirtualClock, run_until_idle
from inference_worker.engines.base import (
    Capacity,
    Engine,
    EngineError,
    SamplingParams,
    Sequence,
    StepResult,
)
from inference_worker.engines.fixed_cost import FixedCostEngine
from inference_worker.requests import Priority, RequestFailed, SchedulerConfig
from inference_worker.scheduler import Scheduler

# Touches no part the two profiles differ in: runs once, in the services pass.
pytestmark = pytest.mark.any_profile

CALL = 0.2


def seq(sid: str, text: str | None = None, max_tokens: int = 256) -> Sequence:
    return Sequence(id=sid, messages=[{"role": "user", "content": sid if text is None else text}],
                    params=SamplingParams(max_tokens=max_tokens))


def fixed(clock: VirtualClock, n: int = 50, **kw) -> FixedCostEngine:
    return FixedCostEngine(max_inputs=n, call_s=CALL, sleep=clock.sleep, **kw)


class Recorder:
    """Collects a request's callbacks."""

    def __init__(self):
        self.tokens: list[str] = []
        self.done = None
        self.error: tuple[str, str] | None = None

    def kw(self) -> dict:
        return {"on_token": self.tokens.append, "on_done": self._done, "on_error": self._err}

    def _done(self, result):
        self.done = result

    def _err(self, code, message):
        self.error = (code, message)


class CountingEngine(Engine):
    """A continuous-batching engine: one token per sequence per step.

    Token k of a sequence is the text "<k>"; a sequence finishes at its
    max_tokens. Per-sequence state lives here keyed by id, as a KV cache
    would; stepping an unknown running id is an error, so a scheduler that
    forgets to prefill or re-steps a released sequence fails the test.
    """

    model_name = "counting"

    def __init__(self, clock, max_batch_size=4, max_batch_tokens=10_000, step_s=0.01,
                 fail_if=None):
        self._cap = Capacity(max_batch_size=max_batch_size, max_batch_tokens=max_batch_tokens,
                             context_window=2048)
        self.clock, self.step_s, self.fail_if = clock, step_s, fail_if
        self.state: dict[str, int] = {}
        self.steps: list[tuple[list[str], list[str]]] = []
        self.released: list[str] = []

    @property
    def capacity(self):
        return self._cap

    def prepare(self, seq):
        seq.prompt_tokens = list(range(len(seq.messages[-1]["content"])))

    def step(self, running, new):
        self.clock.sleep(self.step_s)
        self.steps.append(([s.id for s in running], [s.id for s in new]))
        for s in running:
            assert s.id in self.state, f"{s.id} stepped without prefill"
        for s in new:
            assert s.id not in self.state, f"{s.id} prefilled twice"
        if self.fail_if and any(self.fail_if(s, self.state.get(s.id, 0)) for s in running + new):
            raise RuntimeError("CUDA error: device-side assert triggered")
        out = []
        for s in running + new:
            k = self.state.get(s.id, 0) + 1
            self.state[s.id] = k
            out.append(StepResult(seq_id=s.id, text=f"<{k}>", token_ids=[k],
                                  finished=k >= s.params.max_tokens, finish_reason="length"))
        return out

    def release(self, seq_id):
        self.released.append(seq_id)
        self.state.pop(seq_id, None)


# ---- partial failure -------------------------------------------------------

def test_poisoned_request_in_batch_of_32_fails_alone():
    clock = VirtualClock()
    engine = fixed(clock, n=32, fail_if=lambda s: "POISON" in s.messages[-1]["content"])
    sched = Scheduler(engine, clock=clock)
    recs = [Recorder() for _ in range(32)]
    texts = [f"req-{i}" if i != 17 else "POISON-17" for i in range(32)]
    handles = [sched.submit(seq(f"r{i}", t), **r.kw()) for i, (t, r) in
               enumerate(zip(texts, recs, strict=True))]

    run_until_idle(sched, clock)

    assert engine.batch_sizes[0] == 32          # they really were one batch
    for i, (h, r) in enumerate(zip(handles, recs, strict=True)):
        if i == 17:
            assert r.error[0] == "device_error" and "r17" in r.error[1]
            assert "isolated" in r.error[1]
            with pytest.raises(RequestFailed) as exc:
                h.result(0)
            assert exc.value.code == "device_error"
        else:
            assert r.error is None
            assert h.result(0).text == texts[i][::-1] == r.done.text
    stats = sched.stats()
    assert (stats.completed, stats.failed) == (31, 1)
    # Bisecting 32 costs 1 + 2 * log2(32) calls, not 32.
    assert engine.calls == 11


def test_two_poisoned_requests_are_both_isolated():
    clock = VirtualClock()
    engine = fixed(clock, n=16, fail_if=lambda s: "BAD" in s.messages[-1]["content"])
    sched = Scheduler(engine, clock=clock)
    handles = [sched.submit(seq(f"r{i}", "BAD" if i in (3, 12) else f"ok{i}"))
               for i in range(16)]
    run_until_idle(sched, clock)
    failed = [i for i, h in enumerate(handles) if h.error is not None]
    assert failed == [3, 12]
    assert all(handles[i].result(0).text == f"ok{i}"[::-1] for i in range(16) if i not in failed)


def test_failure_mid_generation_in_continuous_batch_keeps_others_consistent():
    clock = VirtualClock()
    # "b" poisons its third step; a and c must still get every token exactly once.
    engine = CountingEngine(clock, fail_if=lambda s, k: s.id == "b" and k == 2)
    sched = Scheduler(engine, clock=clock)
    a, b, c = (sched.submit(seq(x, max_tokens=5)) for x in "abc")
    run_until_idle(sched, clock)
    assert b.error.code == "engine_error" and "device-side assert" in str(b.error)
    for h in (a, c):
        assert h.result(0).text == "<1><2><3><4><5>"
    assert "b" in engine.released and "b" not in engine.state


# ---- priority and age bound ------------------------------------------------

def test_paid_before_free_and_fifo_within_tier():
    clock = VirtualClock()
    engine = fixed(clock, n=1)
    sched = Scheduler(engine, clock=clock)
    order = ["f1", "f2", "p1", "f3", "p2", "p3"]
    handles = {sid: sched.submit(seq(sid), "free" if sid[0] == "f" else Priority.PAID)
               for sid in order}
    run_until_idle(sched, clock)
    by_start = sorted(handles, key=lambda sid: handles[sid].started_at)
    assert by_start == ["p1", "p2", "p3", "f1", "f2", "f3"]


def test_batch_fills_only_the_room_interactive_work_leaves_in_a_call():
    clock = VirtualClock()
    engine = fixed(clock, n=4)
    sched = Scheduler(engine, clock=clock)
    batch = [sched.submit(seq(f"b{i}"), "batch") for i in range(6)]
    free = [sched.submit(seq(f"f{i}"), "free") for i in range(3)]
    run_until_idle(sched, clock)
    # The first call takes the three free requests and one batch line; batch
    # lines submitted first never go ahead of interactive ones.
    first = [h.id for h in [*batch, *free] if h.started_at == 0.0]
    assert sorted(first) == ["b0", "f0", "f1", "f2"]
    assert all(h.done() and h.error is None for h in [*batch, *free])


def test_batch_holds_at_most_its_share_of_a_continuous_engines_slots():
    clock = VirtualClock()
    engine = CountingEngine(clock, max_batch_size=4)
    sched = Scheduler(engine, SchedulerConfig(batch_slot_share=0.5), clock=clock)
    lines = [sched.submit(seq(f"b{i}", max_tokens=5), "batch") for i in range(4)]
    sched.run_once()
    assert sched.stats().running == 2 and sched.stats().queue_batch == 2
    arrived = sched.submit(seq("p0", max_tokens=1), "paid")
    sched.run_once()  # the free slot goes to the interactive arrival at the next step
    assert arrived.done() and arrived.started_at is not None
    run_until_idle(sched, clock)
    assert all(h.done() and h.error is None for h in lines)


def _free_under_paid_flood(age_bound: float) -> tuple[float, float]:
    """One free request at t=0 and a paid request every 0.1 s (more than a
    one-input device serves) until t=3; returns (free start, last paid start)."""
    clock = VirtualClock()
    engine = fixed(clock, n=1)
    sched = Scheduler(engine, SchedulerConfig(free_age_bound_s=age_bound), clock=clock)
    paid = [sched.submit(seq("p0"), "paid")]
    free = sched.submit(seq("f0"), "free")
    for i in range(1, 31):
        clock.call_at(i * 0.1, lambda i=i: paid.append(sched.submit(seq(f"p{i}"), "paid")))
    run_until_idle(sched, clock)
    return free.started_at, max(p.started_at for p in paid)


def test_age_bound_promotes_starving_free_request():
    start, last_paid = _free_under_paid_flood(age_bound=1.0)
    # Promoted once 1 s old, it goes at the first free slot after that.
    assert 1.0 <= start <= 1.0 + CALL
    assert last_paid > start                    # paid traffic was still waiting


def test_without_age_bound_free_waits_for_all_paid():
    start, last_paid = _free_under_paid_flood(age_bound=1e9)
    assert start > last_paid


# ---- deadlines and cancellation ----------------------------------------------

def test_request_expired_while_waiting_is_dropped_not_run():
    clock = VirtualClock()
    engine = fixed(clock, n=1)
    sched = Scheduler(engine, clock=clock)
    first = sched.submit(seq("first"))
    rec = Recorder()
    sched.submit(seq("late"), deadline=0.1, **rec.kw())
    ok = sched.submit(seq("ok"), timeout=1.0)
    run_until_idle(sched, clock)
    assert first.result(0).text == "tsrif" and ok.result(0).text == "ko"
    assert rec.error[0] == "deadline_exceeded" and "not run" in rec.error[1]
    assert engine.batch_sizes == [1, 1]          # "late" never reached the device
    assert sched.stats().expired == 1


def test_deadline_already_passed_fails_at_submit():
    clock = VirtualClock(start=5.0)
    sched = Scheduler(fixed(clock), clock=clock)
    with pytest.raises(RequestFailed) as exc:
        sched.submit(seq("x"), deadline=4.0)
    assert exc.value.code == "deadline_exceeded"


def test_a_steps_callbacks_run_inside_deliver_and_their_waiters_wake_after_it():
    # The worker sends a step's events at the end of deliver() (core.redis.PipelineWriter.held):
    # a task thread waiting on a request must wake only once its result has been sent.
    clock = VirtualClock()
    seen: list[tuple[str, ...]] = []

    class Deliver:
        def __enter__(self):
            seen.append(("enter",))

        def __exit__(self, *exc):
            seen.append(("exit", *(str(h.done()) for h in handles)))

    sched = Scheduler(fixed(clock), clock=clock, deliver=Deliver)
    handles = [sched.submit(seq(sid), on_done=lambda r: seen.append(("done", r.request_id)))
               for sid in ("a", "b")]
    run_until_idle(sched, clock)
    assert seen == [("enter",), ("done", "a"), ("done", "b"), ("exit", "False", "False")]
    assert [h.result(0).text for h in handles] == ["a", "b"]
    # A cancel outside a step delivers the same way.
    seen.clear()
    handles = [sched.submit(seq("c"), on_error=lambda code, message: seen.append(("error", code)))]
    assert handles[0].cancel("client went away")
    assert seen == [("enter",), ("error", "cancelled"), ("exit", "False")]
    assert handles[0].done()


def test_cancel_waiting_request_never_runs():
    clock = VirtualClock()
    engine = fixed(clock, n=1)
    sched = Scheduler(engine, clock=clock)
    sched.submit(seq("a"))
    rec = Recorder()
    b = sched.submit(seq("b"), **rec.kw())
    assert b.cancel("client disconnected") is True
    assert rec.error == ("cancelled", "cancelled: client disconnected")
    run_until_idle(sched, clock)
    assert engine.batch_sizes == [1]
    assert b.cancel() is False                   # already finished


def test_cancel_during_fixed_call_discards_its_output():
    clock = VirtualClock()
    engine = fixed(clock)
    sched = Scheduler(engine, clock=clock)
    a, b = sched.submit(seq("a")), sched.submit(seq("b"))
    clock.call_at(0.1, lambda: b.cancel())       # mid-call
    run_until_idle(sched, clock)
    assert a.result(0).text == "a"
    assert b.error.code == "cancelled"


def test_cancelled_running_sequence_leaves_continuous_batch():
    clock = VirtualClock()
    engine = CountingEngine(clock, step_s=0.01)
    sched = Scheduler(engine, clock=clock)
    a = sched.submit(seq("a", max_tokens=10))
    b = sched.submit(seq("b", max_tokens=10))
    clock.call_at(0.025, lambda: b.cancel())     # during step 3
    run_until_idle(sched, clock)
    assert a.result(0).text == "".join(f"<{k}>" for k in range(1, 11))
    assert b.error.code == "cancelled"
    assert engine.released.count("b") == 1 and "b" not in engine.state
    # b ran steps 1-3, then left; a ran alone afterwards.
    assert [("b" in r + n) for r, n in engine.steps] == [True] * 3 + [False] * 7


# ---- fixed batches: flush by size and by wait; device never idle ------------

def test_device_never_idle_and_batch_never_sealed_while_busy():
    clock = VirtualClock()
    engine = fixed(clock, n=50)
    sched = Scheduler(engine, clock=clock)          # default max_wait_ms=0
    first = sched.submit(seq("first"))
    later = []
    for t in (0.05, 0.1, 0.15):
        clock.call_at(t, lambda t=t: later.append(sched.submit(seq(f"at{t}"))))
    run_until_idle(sched, clock)
    assert first.started_at == 0.0                  # an idle device is not kept waiting
    assert engine.batch_sizes == [1, 3]             # arrivals during the call go together
    assert [h.started_at for h in later] == [pytest.approx(CALL)] * 3  # no gap


def test_size_cap_splits_backlog_into_full_batches():
    clock = VirtualClock()
    engine = fixed(clock, n=4)
    sched = Scheduler(engine, clock=clock)
    for i in range(10):
        sched.submit(seq(f"r{i}"))
    run_until_idle(sched, clock)
    assert engine.batch_sizes == [4, 4, 2]
    assert clock.now() == pytest.approx(3 * CALL)


def test_max_wait_flushes_at_size_or_wait_whichever_first():
    clock = VirtualClock()
    engine = fixed(clock, n=4)
    sched = Scheduler(engine, SchedulerConfig(max_wait_ms=50), clock=clock)
    # A full batch goes at once.
    full = [sched.submit(seq(f"full{i}")) for i in range(4)]
    assert sched.run_once() == 0
    assert engine.batch_sizes == [4] and all(h.done() for h in full)
    # A partial batch on an idle device waits at most max_wait for company.
    clock.advance_to(1.0)
    part = [sched.submit(seq("p0"))]
    clock.call_at(1.02, lambda: part.append(sched.submit(seq("p1"))))
    run_until_idle(sched, clock)
    assert engine.batch_sizes == [4, 2]
    assert part[0].started_at == pytest.approx(1.05)


def test_max_wait_never_extends_a_wait_spent_behind_a_busy_device():
    clock = VirtualClock()
    engine = fixed(clock, n=4)
    sched = Scheduler(engine, SchedulerConfig(max_wait_ms=50), clock=clock)
    for i in range(4):
        sched.submit(seq(f"full{i}"))
    late = []
    clock.call_at(0.01, lambda: late.append(sched.submit(seq("late"))))
    run_until_idle(sched, clock)
    assert late[0].started_at == pytest.approx(CALL)   # waited 190 ms > 50: goes at once


# ---- continuous batching ---------------------------------------------------

def test_continuous_batching_join_and_leave():
    clock = VirtualClock()
    engine = CountingEngine(clock, max_batch_size=2)
    sched = Scheduler(engine, clock=clock)
    recs = {x: Recorder() for x in "abc"}
    handles = {x: sched.submit(seq(x, max_tokens=n), **recs[x].kw())
               for x, n in (("a", 3), ("b", 1), ("c", 2))}
    run_until_idle(sched, clock)
    assert engine.steps == [
        ([], ["a", "b"]),           # b finishes after one token
        (["a"], ["c"]),             # c joins the running a between steps
        (["a", "c"], []),           # both finish
    ]
    assert recs["a"].tokens == ["<1>", "<2>", "<3>"]
    assert handles["a"].result(0).completion_tokens == 3
    assert handles["b"].result(0).finish_reason == "length"
    assert sorted(engine.released) == ["a", "b", "c"] and not engine.state


def test_token_budget_limits_who_joins():
    clock = VirtualClock()
    # Each request reserves prompt (1) + max_tokens (4) = 5 tokens.
    engine = CountingEngine(clock, max_batch_size=8, max_batch_tokens=12)
    sched = Scheduler(engine, clock=clock)
    for x in "abc":
        sched.submit(seq(x, max_tokens=4))
    run_until_idle(sched, clock)
    assert engine.steps[0] == ([], ["a", "b"])
    assert engine.steps[4] == ([], ["c"])       # joins when a and b leave


def test_request_bigger_than_a_batch_fails_fast():
    clock = VirtualClock()
    sched = Scheduler(CountingEngine(clock, max_batch_tokens=12), clock=clock)
    with pytest.raises(EngineError) as exc:
        sched.submit(seq("x", max_tokens=100))
    assert exc.value.code == "too_many_tokens"


def test_bad_input_fails_at_submit_before_the_device():
    clock = VirtualClock()
    engine = FixedCostEngine(context_window=16, sleep=clock.sleep)
    sched = Scheduler(engine, clock=clock)
    for bad, code in ((seq("e", ""), "empty_input"),
                      (Sequence(id="m", messages=[]), "empty_input"),
                      (seq("long", "x" * 16), "context_length_exceeded"),
                      (seq("mt", "abc", max_tokens=14), "max_tokens_exceeded")):
        with pytest.raises(EngineError) as exc:
            sched.submit(bad)
        assert exc.value.code == code
    sched.submit(seq("dup", max_tokens=4))
    with pytest.raises(EngineError) as exc:
        sched.submit(seq("dup", max_tokens=4))
    assert exc.value.code == "duplicate_request"
    assert engine.calls == 0


def test_queue_full_is_refused():
    clock = VirtualClock()
    sched = Scheduler(fixed(clock), SchedulerConfig(max_queue=2), clock=clock)
    sched.submit(seq("a"))
    sched.submit(seq("b"))
    with pytest.raises(RequestFailed) as exc:
        sched.submit(seq("c"))
    assert exc.value.code == "queue_full"


# ---- settings applied live (a config document) -------------------------------

def test_new_settings_apply_from_the_next_step_and_never_disturb_the_running_one():
    clock = VirtualClock()
    engine = fixed(clock, n=8)
    sched = Scheduler(engine, SchedulerConfig(max_batch_size=8), clock=clock)
    for i in range(14):
        sched.submit(seq(f"r{i}"))
    # A document arrives in the middle of the first call.
    clock.call_at(CALL / 2, lambda: sched.reconfigure(SchedulerConfig(max_batch_size=2, max_queue=20)))
    run_until_idle(sched, clock)
    assert engine.batch_sizes == [8, 2, 2, 2]
    assert sched.config.max_queue == 20 and sched.stats().max_batch_size == 2


def test_a_smaller_batch_keeps_its_running_sequences_and_admits_when_there_is_room():
    clock = VirtualClock()
    engine = CountingEngine(clock, max_batch_size=4)
    sched = Scheduler(engine, clock=clock)
    handles = [sched.submit(seq(x, max_tokens=3)) for x in "abcd"] + [sched.submit(seq("e", max_tokens=1))]
    assert sched.run_once() == 0                      # a-d running
    sched.reconfigure(SchedulerConfig(max_batch_size=2))
    run_until_idle(sched, clock)
    assert engine.steps[:3] == [([], list("abcd")), (list("abcd"), []), (list("abcd"), [])]
    assert engine.steps[3] == ([], ["e"])             # joins once fewer than 2 run
    assert all(h.result(0).finish_reason == "length" for h in handles)


def test_a_waiting_request_that_no_longer_fits_a_batch_fails_instead_of_blocking_the_queue():
    clock = VirtualClock()
    engine = CountingEngine(clock, max_batch_size=1, max_batch_tokens=1000)
    sched = Scheduler(engine, clock=clock)
    first = sched.submit(seq("a", max_tokens=2))
    rec = Recorder()
    big = sched.submit(seq("big", max_tokens=100), **rec.kw())
    small = sched.submit(seq("s", max_tokens=2))
    assert sched.run_once() == 0
    sched.reconfigure(SchedulerConfig(max_batch_tokens=50))
    assert rec.error[0] == "too_many_tokens" and "new settings (50)" in rec.error[1]
    run_until_idle(sched, clock)
    assert big.error.code == "too_many_tokens"
    assert first.result(0).completion_tokens == 2 and small.result(0).completion_tokens == 2
    assert sched.stats().failed == 1


# ---- counters --------------------------------------------------------------

def test_stats_for_heartbeats():
    clock = VirtualClock()
    engine = fixed(clock, n=4)
    sched = Scheduler(engine, SchedulerConfig(stats_window_s=10), clock=clock)
    for i in range(6):
        sched.submit(seq(f"r{i}", "abcd"), "free" if i % 2 else "paid")
    s = sched.stats()
    assert (s.queue_length, s.queue_paid, s.queue_free, s.free_slots) == (6, 3, 3, 0)
    run_until_idle(sched, clock)
    s = sched.stats()
    assert s.completed == 6 and s.queue_length == 0 and s.free_slots == 4
    assert s.batch_sizes == {4: 1, 2: 1} and s.mean_batch_size == 3.0
    assert s.tokens_per_s == pytest.approx(6 * 4 / 10)
    assert s.busy_fraction == pytest.approx(2 * CALL / 10)
    assert s.as_dict()["model"] == "fixed-cost"


def test_stop_fails_waiting_requests():
    clock = VirtualClock()
    sched = Scheduler(fixed(clock), clock=clock)
    rec = Recorder()
    sched.submit(seq("a"), **rec.kw())
    sched.stop()
    assert rec.error[0] == "scheduler_stopped"
    with pytest.raises(RequestFailed) as exc:
        sched.submit(seq("b"))
    assert exc.value.code == "scheduler_stopped"
