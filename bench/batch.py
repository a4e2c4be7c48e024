"""Batch lines beside interactive traffic, on the real scheduler and virtual time.

    .venv/bin/python bench/batch.py [--lines 10000] [--load 0.5]

A device is ``FixedCostEngine`` at 50 inputs / 200 ms per call (250 req/s).
Interactive (paid) requests arrive as a Poisson stream at ``--load`` of the
device limit for 60 virtual seconds; the batch job is ``--lines`` requests at
priority "batch", all queued at t = 0 (what the batch driver's windows keep
topped up). Printed, against the interactive-only run of the same arrivals:

- interactive p50 / p99 latency with and without the job (ratio);
- batch lines/s while interactive traffic runs, as a share of the capacity
  that traffic leaves idle (limit x (1 - load));
- the job's total time.

What this does not measure: the HTTP path, the batch driver (its windows and
database writes) or a continuous-batching engine (see batch_slot_share); the
peak-RSS run over a 50,000-line file is not written yet.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from inference_worker.clock import VirtualClock, run_until_idle  # noqa: E402
from inference_worker.engines.base import SamplingParams, Sequence  # noqa: E402
from inference_worker.engines.fixed_cost import FixedCostEngine  # noqa: E402
from inference_worker.scheduler import Scheduler, SchedulerConfig  # noqa: E402

N, CALL = 50, 0.2
LIMIT = N / CALL
DURATION = 60.0


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def run(arrivals, lines: int):
    clock = VirtualClock()
    engine = FixedCostEngine(max_inputs=N, call_s=CALL, sleep=clock.sleep)
    sched = Scheduler(engine, SchedulerConfig(max_queue=10**9), clock=clock)
    params = SamplingParams(max_tokens=8)
    interactive, batch_done = [], []

    def seq(i):
        return Sequence(id=str(i), messages=[{"role": "user", "content": "ping"}], params=params)

    for i in range(lines):
        sched.submit(seq(f"b{i}"), "batch", on_done=lambda r: batch_done.append(clock.now()))
    for i, t in enumerate(arrivals):
        clock.call_at(t, lambda i=i: sched.submit(seq(f"i{i}"), "paid",
                                                  on_done=lambda r: interactive.append(r.latency_s)))
    run_until_idle(sched, clock)
    return interactive, batch_done


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--load", type=float, default=0.5)
    args = ap.parse_args()
    rng = random.Random(7)
    rate = args.load * LIMIT
    arrivals, t = [], rng.expovariate(rate)
    while t < DURATION:
        arrivals.append(t)
        t += rng.expovariate(rate)
    alone, _ = run(arrivals, 0)
    beside, batch_done = run(arrivals, args.lines)
    idle = LIMIT * (1 - args.load)
    during = sum(1 for f in batch_done if f < DURATION) / DURATION
    print(f"device: {N} inputs / {CALL * 1000:.0f} ms per call = {LIMIT:.0f} req/s; interactive "
          f"{rate:.0f} req/s ({args.load:.0%}); batch job {args.lines} lines")
    print(f"{'':28} {'alone':>10} {'with batch':>12} {'ratio':>8}")
    for name, q in (("interactive p50 (ms)", 0.5), ("interactive p99 (ms)", 0.99)):
        a, b = 1000 * pct(alone, q), 1000 * pct(beside, q)
        print(f"{name:28} {a:10.0f} {b:12.0f} {b / a:7.2f}x")
    print(f"batch lines/s during interactive traffic: {during:.0f} = {during / idle:.0%} of the idle "
          f"capacity ({idle:.0f} req/s)")
    # Idle capacity while interactive traffic runs, the whole device after it stops.
    if args.lines <= idle * DURATION:
        bound = args.lines / idle
    else:
        bound = DURATION + (args.lines - idle * DURATION) / LIMIT
    took = max(batch_done)
    print(f"the whole job: {took:.1f} s (bound: {bound:.1f} s; {bound / took:.0%} of it)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
