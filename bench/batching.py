"""Batching benchmark: our scheduler against the alternatives, on virtual time.

    .venv/bin/python bench/batching.py --quick

A device is ``FixedCostEngine`` at 50 inputs / 200 ms per call (250 req/s)
with Poisson arrivals. Everything runs as a discrete-event simulation on a
virtual clock, so a simulated minute costs well under a second and the
results do not depend on the machine:

- ours: the real ``Scheduler`` and ``FixedCostEngine``, driven by
  ``VirtualClock`` (the engine's 200 ms "sleep" advances virtual time and
  submits the requests that arrive meanwhile);
- the seed batcher (simulated): an asyncio queue, a 50 ms window started by the
  first request, batches sealed by the window and run by the device one at a
  time, in order;
- celery-batches (simulated, not run): its algorithm as documented: the worker
  holds at most prefetch_multiplier x concurrency unacked messages (acks_late:
  a batch's messages stay unacked until it finishes), flushes its buffer when
  it reaches flush_every, and on a timer every flush_interval; shown with
  Celery's default prefetch (4 x concurrency 1) and tuned so a full batch fits
  (prefetch 50) and so that two do (prefetch 100);
- one Celery task per request, no batching: one input per 200 ms call.

Printed: saturation throughput as a fraction of the device limit; p50/p99
latency at 30/60/90 % load divided by the call time, and each alternative's
figures as ratios against ours; the seed's sizing, 2,000 req/s over 8 devices.
"""

from __future__ import annotations

import argparse
import collections
import heapq
import math
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")  # request checks read limits from settings

from inference_worker.clock import VirtualClock, run_until_idle  # noqa: E402
from inference_worker.engines.base import SamplingParams, Sequence  # noqa: E402
from inference_worker.engines.fixed_cost import FixedCostEngine  # noqa: E402
from inference_worker.requests import SchedulerConfig  # noqa: E402
from inference_worker.scheduler import Scheduler  # noqa: E402

N = 50            # inputs per call
CALL = 0.2        # seconds per call
LIMIT = N / CALL  # requests/s one device can serve
LOADS = (0.3, 0.6, 0.9)
SATURATION_OFFER = 2.0   # offered load (x device limit) for the saturation runs


@dataclass
class Run:
    offered: float            # req/s
    served: float             # req/s completed during the arrival window (after warm-up)
    latencies: list[float]    # seconds, every request (the queue drained at the end)
    mean_batch: float

    def pct(self, q: float) -> float:
        xs = sorted(self.latencies)
        return xs[min(len(xs) - 1, math.ceil(q * len(xs)) - 1)] if xs else math.nan

    @property
    def stable(self) -> bool:
        return self.served >= 0.97 * self.offered


def poisson(rate: float, duration: float, rng: random.Random) -> list[float]:
    out, t = [], rng.expovariate(rate)
    while t < duration:
        out.append(t)
        t += rng.expovariate(rate)
    return out


def served_rate(arrivals: list[float], finishes: list[float], duration: float) -> float:
    # Completions per second inside the arrival window, skipping a 10 % warm-up.
    start = 0.1 * duration
    return sum(start <= f < duration for f in finishes) / (duration - start)


# ---- ours: the real scheduler on virtual time --------------------------------

def run_ours(arrivals: list[float], duration: float, drain: bool = True) -> Run:
    clock = VirtualClock()
    engine = FixedCostEngine(max_inputs=N, call_s=CALL, sleep=clock.sleep)
    sched = Scheduler(engine, SchedulerConfig(max_queue=10**9), clock=clock)
    finishes: list[float] = []
    latencies: list[float] = []
    params = SamplingParams(max_tokens=8)

    def done(result) -> None:
        finishes.append(clock.now())
        latencies.append(result.latency_s)

    for i, t in enumerate(arrivals):
        clock.call_at(t, lambda i=i: sched.submit(
            Sequence(id=str(i), messages=[{"role": "user", "content": "ping"}], params=params),
            on_done=done))
    run_until_idle(sched, clock, until=None if drain else duration)
    return Run(len(arrivals) / duration, served_rate(arrivals, finishes, duration), latencies,
               sum(engine.batch_sizes) / max(1, engine.calls))


# ---- the alternatives, simulated ---------------------------------------------

def run_seed(arrivals: list[float], duration: float, window: float = 0.05,
             drain: bool = True) -> Run:
    """asyncio queue; a window opens at the first request and closes after
    ``window`` or at N items; sealed batches wait for the device in order."""
    batches = []
    i, collector_free = 0, 0.0
    while i < len(arrivals):
        opened = max(arrivals[i], collector_free)
        j = i
        while j < len(arrivals) and j - i < N and arrivals[j] <= opened + window:
            j += 1
        sealed = opened + window if j - i < N else max(opened, arrivals[j - 1])
        batches.append((sealed, i, j))
        collector_free, i = sealed, j
    device_free = 0.0
    finishes, latencies, sizes = [], [], []
    for sealed, i, j in batches:
        start = max(sealed, device_free)
        if not drain and start >= duration:
            break
        device_free = start + CALL
        sizes.append(j - i)
        for k in range(i, j):
            finishes.append(device_free)
            latencies.append(device_free - arrivals[k])
    return Run(len(arrivals) / duration, served_rate(arrivals, finishes, duration), latencies,
               sum(sizes) / max(1, len(sizes)))


def run_celery_batches(arrivals: list[float], duration: float, *, prefetch: int,
                       flush_every: int = N, flush_interval: float = 0.05,
                       drain: bool = True) -> Run:
    """celery-batches with acks_late on one device (worker concurrency 1)."""
    broker: collections.deque[int] = collections.deque()
    buffer: list[int] = []
    pool: collections.deque[list[int]] = collections.deque()
    unacked = 0
    device_busy = False
    finishes, latencies, sizes = [], [], []
    events: list[tuple[float, int, str, object]] = []
    seq = 0

    def push(t: float, kind: str, data: object = None) -> None:
        nonlocal seq
        heapq.heappush(events, (t, seq, kind, data))
        seq += 1

    def flush(now: float) -> None:
        nonlocal buffer
        if buffer:
            pool.append(buffer)
            buffer = []
            start_device(now)

    def start_device(now: float) -> None:
        nonlocal device_busy
        if not device_busy and pool:
            batch = pool.popleft()
            device_busy = True
            sizes.append(len(batch))
            push(now + CALL, "done", batch)

    def deliver(now: float) -> None:
        nonlocal unacked
        while broker and unacked < prefetch:
            buffer.append(broker.popleft())
            unacked += 1
            if len(buffer) >= flush_every:
                flush(now)

    for i, t in enumerate(arrivals):
        push(t, "arrive", i)
    push(flush_interval, "tick")
    remaining = len(arrivals)
    while events and remaining:
        now, _, kind, data = heapq.heappop(events)
        if not drain and now >= duration:
            break
        if kind == "arrive":
            broker.append(data)
            deliver(now)
        elif kind == "tick":
            flush(now)
            push(now + flush_interval, "tick")
        else:
            device_busy = False
            for k in data:
                finishes.append(now)
                latencies.append(now - arrivals[k])
            remaining -= len(data)
            unacked -= len(data)   # acks_late: acked when the batch finishes
            deliver(now)
            start_device(now)
    return Run(len(arrivals) / duration, served_rate(arrivals, finishes, duration), latencies,
               sum(sizes) / max(1, len(sizes)))


def run_per_request(arrivals: list[float], duration: float, drain: bool = True) -> Run:
    """One task per request: one input per device call, in arrival order."""
    free, finishes, latencies = 0.0, [], []
    for a in arrivals:
        start = max(a, free)
        if not drain and start >= duration:
            break
        free = start + CALL
        finishes.append(free)
        latencies.append(free - a)
    return Run(len(arrivals) / duration, served_rate(arrivals, finishes, duration), latencies, 1.0)


SYSTEMS = {
    "ours": run_ours,
    "seed": run_seed,
    "celery-batches(prefetch=4)": lambda a, d, **kw: run_celery_batches(a, d, prefetch=4, **kw),
    "celery-batches(prefetch=50)": lambda a, d, **kw: run_celery_batches(a, d, prefetch=50,
                                                                        **kw),
    "celery-batches(prefetch=100)": lambda a, d, **kw: run_celery_batches(a, d, prefetch=100,
                                                                         **kw),
    "per-request": run_per_request,
}


def fmt_ratio(theirs: float, ours: float) -> str:
    return f"{theirs / ours:.2f}x" if ours > 0 and math.isfinite(theirs) else "n/a"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="shorter simulated runs (< 1 min)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    load_s, sat_s, fleet_s = (300.0, 60.0, 60.0) if args.quick else (3000.0, 600.0, 600.0)
    rng = random.Random(args.seed)
    wall = time.monotonic()

    print(f"# FixedCostEngine {N} inputs / {CALL * 1000:.0f} ms per call: device limit "
          f"{LIMIT:.0f} req/s; Poisson arrivals; discrete-event simulation on virtual time")
    print(f"# {load_s:.0f} s simulated per load point, {sat_s:.0f} s at saturation "
          f"(offered {SATURATION_OFFER:.1f}x the limit); latencies / call time")
    print("# ours = the real Scheduler + FixedCostEngine on a VirtualClock; the others are "
          "simulations of their algorithms (see bench/batching.py):")
    print("#   seed = asyncio queue, 50 ms window from the first request, sealed batches run "
          "one at a time")
    print("#   celery-batches = buffer <= prefetch_multiplier x concurrency unacked messages "
          "(acks_late), flush_every=50, flush_interval=50 ms; prefetch 4 (Celery's default "
          "multiplier, concurrency 1), 50 (one batch), 100 (two batches)")
    print("#   per-request = one Celery task per request, no batching")

    # Saturation: same arrivals for everyone; no drain (only the rate matters).
    sat_arrivals = poisson(SATURATION_OFFER * LIMIT, sat_s, rng)
    sat = {name: fn(sat_arrivals, sat_s, drain=False) for name, fn in SYSTEMS.items()}
    ours_sat = sat["ours"].served / LIMIT
    verdict = "ok" if ours_sat >= 0.97 else "BELOW GOAL"
    print(f"saturation: ours {ours_sat:.3f} of the device limit "
          f"(mean batch {sat['ours'].mean_batch:.1f}; goal >= 0.97) [{verdict}]")
    for name, run in sat.items():
        if name != "ours":
            print(f"saturation: {name} {run.served / LIMIT:.3f} of the device limit "
                  f"(mean batch {run.mean_batch:.1f}); {fmt_ratio(run.served, sat['ours'].served)} "
                  "of ours")

    for load in LOADS:
        arrivals = poisson(load * LIMIT, load_s, rng)
        runs = {name: fn(arrivals, load_s) for name, fn in SYSTEMS.items()}
        ours = runs["ours"]
        p50, p99 = ours.pct(0.5) / CALL, ours.pct(0.99) / CALL
        goal = ""
        if load == 0.3:
            goal = f" (goal p99 < 2x) [{'ok' if p99 < 2 else 'ABOVE GOAL'}]"
        print(f"load {load:.0%}: ours p50 {p50:.2f}x p99 {p99:.2f}x call time, "
              f"served {ours.served:.0f}/{ours.offered:.0f} req/s, "
              f"mean batch {ours.mean_batch:.1f}{goal}")
        for name, run in runs.items():
            if name == "ours":
                continue
            note = "" if run.stable else (f"  UNSTABLE: serves {run.served:.0f} of "
                                          f"{run.offered:.0f} req/s, queue grows, latency "
                                          "grows with run length")
            print(f"load {load:.0%}: {name} p50 {run.pct(0.5) / CALL:.2f}x "
                  f"p99 {run.pct(0.99) / CALL:.2f}x call time; vs ours p50 "
                  f"{fmt_ratio(run.pct(0.5), ours.pct(0.5))} p99 "
                  f"{fmt_ratio(run.pct(0.99), ours.pct(0.99))}{note}")

    # The seed's sizing: 2,000 req/s over 8 devices. Dispatch is round-robin
    # (RabbitMQ delivers to consumers in turn), which does not depend on device
    # state, so each device's share is simulated on its own and merged. The
    # queues drain at the end, so every request's latency counts.
    rate = 2000.0
    arrivals = poisson(rate, fleet_s, rng)
    for name, devices in (("ours", 8), ("seed", 8), ("ours", 10)):
        runs = [SYSTEMS[name](arrivals[d::devices], fleet_s) for d in range(devices)]
        merged = Run(rate, sum(r.served for r in runs), [x for r in runs for x in r.latencies],
                     sum(r.mean_batch for r in runs) / devices)
        print(f"sizing: {name} {rate:.0f} req/s offered to {devices} devices "
              f"({devices * LIMIT:.0f} req/s limit, {rate / (devices * LIMIT):.0%} load): "
              f"achieved {merged.served:.0f} req/s, p50 {merged.pct(0.5):.3f} s p99 "
              f"{merged.pct(0.99):.3f} s ({merged.pct(0.99) / CALL:.2f}x call time), "
              f"{fleet_s:.0f} s of arrivals, round-robin dispatch")
    print(f"# wall time {time.monotonic() - wall:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
