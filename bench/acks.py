"""Late acks of the Celery threads pool: does a full prefetch window stall? (run by
hand; prints ratios, asserts nothing)

    .venv/bin/python bench/acks.py [--requests 400] [--concurrency 8]

Same services as bench/e2e.py. A GPU worker with -c C (C messages in the worker at
most: prefetch 1 per thread, late acks) on the fixed-cost engine (50 inputs, 50 ms
per call) gets N requests at once, published straight to its queue; the bench
reads every result and prints the throughput, with config/celery.py's AckWake on
(CELERY_ACK_WAKE=true) and off (false), alternating, against the device limit, and
the worker's CPU per second once idle. With C < 50 a call is never full: the limit
is C / 50 ms. Without the wake-up, an ack waits for the consumer loop's next
wake-up (a message or its 1 s idle poll).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e  # noqa: E402  (sets up Django)

from inference_client.backend import CeleryBackend  # noqa: E402
from inference_protocol.backend import live_workers  # noqa: E402
from inference_protocol.generation import GenerationRequest  # noqa: E402

CALL_S = 0.05
IDLE_S = 5  # the idle worker's CPU is read over this long


def one_run(requests: int, concurrency: int, wake: bool) -> tuple[float, float]:
    """(req/s, the idle worker's CPU milliseconds per second afterwards)"""
    model = f"bench-acks-{uuid.uuid4().hex[:6]}"
    spec = {model: {"engine": "fixed_cost", "max_inputs": 50, "call_s": CALL_S}}
    env = dict(os.environ, INFERENCE_MODELS=json.dumps(spec), CELERY_ACK_WAKE=str(wake).lower(),
               HEARTBEAT_INTERVAL_S="0.5", LOG_LEVEL="WARNING")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", f"gpu.{model}", "-P", "threads",
         "-c", str(concurrency), "--prefetch-multiplier", "1", "-l", "warning", "-n", f"{model}@%h",
         "--without-mingle", "--without-gossip"], cwd=e2e.ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not live_workers(model):
            if time.monotonic() > deadline:
                raise TimeoutError("the worker did not start")
            time.sleep(0.1)
        backend = CeleryBackend()
        batch = [GenerationRequest(request_id=uuid.uuid4().hex, model=model, seed=1, max_tokens=4,
                                   messages=[{"role": "user", "content": "ack"}]) for _ in range(requests)]
        started = time.monotonic()
        for request in batch:
            backend.submit(request)
        for request in batch:
            assert backend.result(request.request_id, timeout_s=120)["type"] == "done"
        rate = requests / (time.monotonic() - started)
        proc = e2e.psutil.Process(worker.pid)
        before, at = e2e.cpu_seconds([proc]), time.monotonic()
        time.sleep(IDLE_S)
        return rate, (e2e.cpu_seconds([proc]) - before) * 1000 / (time.monotonic() - at)
    finally:
        worker.terminate()
        worker.wait(15)
        from tests.inference_worker.workers import delete_queues

        delete_queues([f"gpu.{model}"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    limit = min(args.concurrency, 50) / CALL_S
    rates: dict[bool, list[float]] = {True: [], False: []}
    idle: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.rounds):
        for wake in rates:
            rate, idle_ms = one_run(args.requests, args.concurrency, wake)
            rates[wake].append(rate)
            idle[wake].append(idle_ms)
    load = os.getloadavg()
    print(f"{args.requests} requests at once, -c {args.concurrency}, {CALL_S * 1000:.0f} ms calls: "
          f"limit {limit:.0f} req/s; load average {load[0]:.2f}")
    for wake, values in rates.items():
        best = max(values)
        print(f"  CELERY_ACK_WAKE={str(wake).lower()}: {' '.join(f'{v:.0f}' for v in values)} req/s "
              f"(best {best / limit:.2f} of the limit); idle worker "
              f"{' '.join(f'{v:.1f}' for v in idle[wake])} ms CPU/s")
    print(f"  wake on / off (best of each): {max(rates[True]) / max(rates[False]):.1f}x")


if __name__ == "__main__":
    main()
