"""Late acks of the Celery threads pool: does a full prefetch window stall? (run by
hand; prints ratios, asserts nothing)

    .venv/bin/python bench/acks.py [--requests 400] [--concurrency 8]

Same services as bench/e2e.py. A GPU worker with -c C (C messages in the worker at
most: prefetch 1 per thread, late acks) on the fixed-cost engine (50 inputs, 50 ms
per call) gets N requests at once, published straight to its queue; the bench
reads every result and prints the throughput, with config/celery.py's AckFlush on
(CELERY_ACK_FLUSH_MS=5) and off (0), alternating, against the device limit. With
C < 50 a call is never full: the limit is C / 50 ms. Without the flush, an ack
waits for the consumer loop's next wake-up (a message or its 1 s idle poll).
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


def one_run(requests: int, concurrency: int, flush_ms: int) -> float:
    model = f"bench-acks-{uuid.uuid4().hex[:6]}"
    spec = {model: {"engine": "fixed_cost", "max_inputs": 50, "call_s": CALL_S}}
    env = dict(os.environ, INFERENCE_MODELS=json.dumps(spec), CELERY_ACK_FLUSH_MS=str(flush_ms),
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
        return requests / (time.monotonic() - started)
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
    rates: dict[int, list[float]] = {5: [], 0: []}
    for _ in range(args.rounds):
        for flush_ms in rates:
            rates[flush_ms].append(one_run(args.requests, args.concurrency, flush_ms))
    load = os.getloadavg()
    print(f"{args.requests} requests at once, -c {args.concurrency}, {CALL_S * 1000:.0f} ms calls: "
          f"limit {limit:.0f} req/s; load average {load[0]:.2f}")
    for flush_ms, values in rates.items():
        best = max(values)
        print(f"  CELERY_ACK_FLUSH_MS={flush_ms}: {' '.join(f'{v:.0f}' for v in values)} req/s "
              f"(best {best / limit:.2f} of the limit)")
    print(f"  flush on / off (best of each): {max(rates[5]) / max(rates[0]):.1f}x")


if __name__ == "__main__":
    main()
