"""Live config apply benchmark (run by hand; prints figures, asserts nothing).

    .venv/bin/python bench/live_config.py [--engine llamacpp|fixed_cost] [--docs 6] [--clients 8]

One process runs a model's scheduler (inference_worker.runtime) under closed-loop
traffic (--clients threads, each one request after another through
run_generation), and applies --docs signed config documents in turn to its
ConfigState, as its watcher does on pickup (bench/config.py measures pickup):
even ones change a scheduler setting only (max_batch_size 4 <-> 8), odd ones an
engine option too (llamacpp: n_seq_max 8 <-> 4; fixed_cost: call_s 0.05 <-> 0.02
s, so the rate after a hand-over differs by design), which hands over to a new
engine. Prints the requests that failed (the issue: none); per kind of
document, document applied -> settings in force (scheduler) or -> the new engine
taking requests (hand-over), against the 2 s pickup budget; for hand-overs, when
the old engine had drained and closed, and the requests served in the second
after the hand-over against the rate before any document.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")
os.environ.setdefault("PROMPTYARD_EMBEDDED", "1")
for name in ("REDIS_URL", "CELERY_BROKER_URL", "DATABASE_URL"):  # one process, no services
    os.environ.pop(name, None)

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from inference_protocol import config  # noqa: E402
from inference_protocol.config_document import ConfigDocument  # noqa: E402
from inference_protocol.events import MemoryEventLog  # noqa: E402
from inference_protocol.generation import GenerationRequest  # noqa: E402
from inference_worker import runtime  # noqa: E402
from inference_worker.generation import run_generation  # noqa: E402

MODEL = "bench-live"
SPECS = {"llamacpp": ({"engine": "llamacpp", "n_seq_max": 8}, {"n_seq_max": 4}),
         "fixed_cost": ({"engine": "fixed_cost", "max_inputs": 8, "call_s": 0.05}, {"call_s": 0.02})}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", choices=sorted(SPECS), default="llamacpp")
    parser.add_argument("--docs", type=int, default=6)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=16)
    args = parser.parse_args()
    base, changed = SPECS[args.engine]
    content = config.bootstrap_content(settings)
    content["models"] = {MODEL: base}
    state = config.state()
    number = 0

    def publish(spec: dict) -> float:
        nonlocal number
        number += 1
        content["models"] = {MODEL: spec}
        doc = ConfigDocument(number=number, parent=number - 1, content=content, created_at="bench",
                                    created_by="bench").signed(settings.CONFIG_SIGNING_KEY)
        at = time.monotonic()
        assert state.offer(doc), state.last_refusal
        return at

    publish(base)
    log, stop = MemoryEventLog(), threading.Event()
    done: list[tuple[float, str]] = []  # (finished at, terminal event type)
    runtime.get_scheduler(MODEL)

    def client() -> None:
        while not stop.is_set():
            request = GenerationRequest(request_id=uuid.uuid4().hex, model=MODEL, max_tokens=args.max_tokens,
                                        temperature=0.0, messages=[{"role": "user", "content": "Count."}])
            event = run_generation(request, log)
            done.append((time.monotonic(), event["type"] if event["type"] == "done" else event.get("code")))

    threads = [threading.Thread(target=client, daemon=True) for _ in range(args.clients)]
    for t in threads:
        t.start()
    while len(done) < 2 * args.clients:  # steady traffic before the first document
        time.sleep(0.05)
    warm_from, warm_count = time.monotonic(), len(done)
    time.sleep(3)
    warm_rate = (len(done) - warm_count) / (time.monotonic() - warm_from)
    engine, rows = dict(base), {"scheduler": [], "engine": []}
    for i in range(args.docs):
        old = runtime.loaded_schedulers()[MODEL]
        size = 4 if i % 4 < 2 else 8
        if i % 2:  # an engine option too: a hand-over
            engine = dict(base) if engine != base else {**base, **changed}
        at = publish({**engine, "scheduler": {"max_batch_size": size}})
        if i % 2 == 0:
            assert runtime.loaded_schedulers()[MODEL] is old and old.config.max_batch_size == size
            rows["scheduler"].append((time.monotonic() - at, 0.0, 0))
        else:
            while runtime.loaded_schedulers()[MODEL] is old:
                time.sleep(0.001)
            swapped = time.monotonic()
            while old._thread is not None:  # draining what it held
                time.sleep(0.005)
            drained = time.monotonic()
            time.sleep(max(0.0, swapped + 1 - time.monotonic()))
            served = sum(1 for t, _ in done if swapped <= t < swapped + 1)
            rows["engine"].append((swapped - at, drained - at, served))
        time.sleep(1)
    stop.set()
    for t in threads:
        t.join(30)
    failed = [code for _, code in done if code != "done"]
    print(f"engine {args.engine}, {args.clients} clients, {len(done)} requests, "
          f"{warm_rate:.1f}/s before any document; failed: {len(failed)} {failed[:5]}")
    for kind, values in rows.items():
        applied = [v[0] * 1000 for v in values]
        p50 = statistics.median(applied)
        print(f"  {kind:9} x{len(values)}: document applied -> in force p50 {p50:.2f} ms, "
              f"max {max(applied):.2f} ms ({max(applied) / 2000:.4f} of the 2 s pickup budget)")
        if kind == "engine":
            drained = statistics.median(v[1] * 1000 for v in values)
            served = statistics.median(v[2] for v in values)
            print(f"            old engine drained and closed by p50 {drained:.0f} ms; served in the second "
                  f"after the hand-over: p50 {served} ({served / warm_rate:.2f}x the rate before)")


if __name__ == "__main__":
    main()
