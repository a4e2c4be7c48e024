"""Config pickup benchmark (run by hand; prints figures and ratios, asserts nothing).

    REDIS_URL=redis://127.0.0.1:6379/14 .venv/bin/python bench/config.py [--nodes 4] [--docs 20]

Starts --nodes processes, each running the same ConfigWatcher a gateway or worker
runs (inference_protocol.config), publishes --docs signed documents into Redis the
way the control plane does (config.broadcast), and prints, per mode:
- pub/sub (the poll at its default period as the fallback);
- poll only (CONFIG_PUBSUB off), the fallback alone;
the publish -> applied latency (p50 / p99 / max over every node and document,
wall clocks of one machine) and its ratio to the 2 s the issue allows. Then the
cost of reading the config on the request path: config.current() against a plain
settings attribute and against one Redis GET.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")
if not os.environ.get("CONFIG_SIGNING_KEY"):
    from inference_protocol.signing import generate_keypair

    os.environ["CONFIG_SIGNING_KEY"], os.environ["CONFIG_PUBLIC_KEY"] = generate_keypair()

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from core.redis import get_redis  # noqa: E402
from inference_protocol import config  # noqa: E402
from inference_protocol.config_document import ConfigDocument  # noqa: E402


def child(pubsub: bool, poll_s: float) -> None:
    node = config.ConfigState(lambda: config.bootstrap_content(settings), lambda: settings.CONFIG_PUBLIC_KEY)
    node.listeners.append(lambda old, new: print(f"{new.number} {time.time()}", flush=True))
    watcher = config.ConfigWatcher(node, get_redis, poll_s=poll_s, pubsub=pubsub)
    watcher.start()
    print("ready", flush=True)
    sys.stdin.read()  # until the parent closes our stdin


def run_mode(nodes: int, docs: int, pubsub: bool, poll_s: float, first: int) -> list[float]:
    procs = [subprocess.Popen([sys.executable, __file__, "--child", "--pubsub", str(int(pubsub)),
                               "--poll-s", str(poll_s)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, cwd=ROOT) for _ in range(nodes)]
    lines: list[list[str]] = [[] for _ in procs]
    get_redis().delete(config.latest_key())  # nodes start on document 0

    def drain(i, proc):
        for line in proc.stdout:
            lines[i].append(line.strip())
    readers = [threading.Thread(target=drain, args=(i, p), daemon=True) for i, p in enumerate(procs)]
    for r in readers:
        r.start()
    while not all(lines[i] and lines[i][0] == "ready" for i in range(nodes)):
        time.sleep(0.05)
    time.sleep(0.5)  # let every subscriber subscribe
    content = config.bootstrap_content(settings)
    sent = {}
    redis = get_redis()
    for n in range(first, first + docs):
        doc = ConfigDocument(number=n, parent=n - 1, content=content, created_at="bench",
                                    created_by="bench").signed(settings.CONFIG_SIGNING_KEY)
        sent[n] = time.time()
        config.broadcast(redis, doc)
        time.sleep(max(0.15, poll_s * 1.3))  # one document at a time: each is seen on its own
    time.sleep(poll_s + 0.5)
    for p in procs:
        p.stdin.close()
        p.wait(10)
    latencies = []
    for out in lines:
        for line in out[1:]:
            n, at = line.split()
            if int(n) in sent:
                latencies.append(float(at) - sent[int(n)])
    missing = nodes * docs - len(latencies)
    if missing:
        print(f"  {missing} pickups missing (a node skipped a document: it saw a newer one first)")
    return latencies


def report(name: str, latencies: list[float]) -> None:
    lat = sorted(latencies)
    p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))]
    print(f"{name:28s} n={len(lat):4d}  p50 {statistics.median(lat) * 1000:7.1f} ms  "
          f"p99 {p99 * 1000:7.1f} ms  max {lat[-1] * 1000:7.1f} ms  max/2s = {lat[-1] / 2:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--docs", type=int, default=20)
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--pubsub", type=int, default=1)
    parser.add_argument("--poll-s", type=float, default=settings.CONFIG_POLL_S)
    args = parser.parse_args()
    if args.child:
        child(bool(args.pubsub), args.poll_s)
        return
    if not settings.REDIS_URL:
        sys.exit("set REDIS_URL (a database of your own: the benchmark writes config:latest)")
    redis = get_redis()
    redis.delete(config.latest_key())
    print(f"{args.nodes} nodes, {args.docs} documents per mode, poll period {settings.CONFIG_POLL_S}s")
    report("pub/sub (+ poll fallback)", run_mode(args.nodes, args.docs, True, settings.CONFIG_POLL_S, 1))
    report("poll only", run_mode(args.nodes, args.docs, False, settings.CONFIG_POLL_S, 1 + args.docs))
    redis.delete(config.latest_key())

    n = 200_000
    current = timeit.timeit(lambda: config.current().rate_limits["free"], number=n) / n
    attr = timeit.timeit(lambda: settings.RATE_LIMITS["free"], number=n) / n
    get = timeit.timeit(lambda: redis.get(config.latest_key()), number=2000) / 2000
    print(f"config.current() per read {current * 1e9:6.0f} ns; settings attribute {attr * 1e9:6.0f} ns "
          f"(ratio {current / attr:.2f}); one Redis GET {get * 1e6:6.0f} us (ratio {get / current:.0f}x)")


if __name__ == "__main__":
    main()
