"""The batch driver's feed on virtual time (inference_client.batch_job): at most
two calls' worth of lines started at once, each replaced a round trip after it
ends, beside Poisson interactive traffic at half the device's limit."""

from __future__ import annotations

import random

import pytest

from inference_worker.clock import VirtualClock, run_until_idle
from inference_worker.engines.base import SamplingParams, Sequence
from inference_worker.engines.fixed_cost import FixedCostEngine
from inference_worker.requests import SchedulerConfig
from inference_worker.scheduler import Scheduler

pytestmark = pytest.mark.any_profile

N, CALL, SPAN, RTT = 50, 0.2, 30.0, 0.03


def _run(arrivals: list[float], cap: int) -> tuple[list[float], list[float]]:
    """Interactive latencies, and when each batch line ended (before SPAN)."""
    clock = VirtualClock()
    sched = Scheduler(FixedCostEngine(max_inputs=N, call_s=CALL, sleep=clock.sleep),
                      SchedulerConfig(max_queue=10**6), clock=clock)
    params = SamplingParams(max_tokens=8)
    latencies, ended = [], []
    fed = iter(range(10**6))

    def done(_):
        ended.append(clock.now())
        clock.call_at(clock.now() + RTT, line)  # the driver hears of it, the next line arrives

    def line():
        if clock.now() < SPAN:
            sched.submit(Sequence(id=f"b{next(fed)}", messages=[{"role": "user", "content": "b"}],
                                  params=params), "batch", on_done=done)

    for _ in range(cap):
        line()
    for i, t in enumerate(arrivals):
        clock.call_at(t, lambda i=i: sched.submit(
            Sequence(id=f"i{i}", messages=[{"role": "user", "content": "i"}], params=params), "paid",
            on_done=lambda r: latencies.append(r.latency_s)))
    run_until_idle(sched, clock)
    return latencies, [t for t in ended if t < SPAN]


def _pct(values: list[float], q: float) -> float:
    return sorted(values)[int(q * (len(values) - 1))]


def test_two_calls_of_lines_at_a_time_fill_the_room_interactive_traffic_leaves_or_the_device():
    rng, rate = random.Random(7), 0.5 * N / CALL
    arrivals, t = [], rng.expovariate(rate)
    while t < SPAN:
        arrivals.append(t)
        t += rng.expovariate(rate)
    alone, _ = _run(arrivals, 0)
    beside, ended = _run(arrivals, 2 * N)
    for q in (0.5, 0.99):  # interactive requests wait for nothing of the batch's
        assert _pct(beside, q) == pytest.approx(_pct(alone, q), rel=0.01)
    idle = N / CALL * SPAN - len(arrivals)
    assert len(ended) >= 0.95 * idle, len(ended) / idle
    # Alone, the call that runs and the one waiting keep the device full (one
    # call's worth would leave it idle a round trip after each call: half of it).
    _, ended = _run([], 2 * N)
    assert len(ended) >= 0.95 * N / CALL * SPAN
