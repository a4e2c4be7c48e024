"""Batch lines beside interactive traffic, on the real scheduler and virtual time;
with --live, through the whole HTTP stack; with --rss, the batch worker's memory.

    .venv/bin/python bench/batch.py [--lines 10000] [--load 0.5]
    .venv/bin/python bench/batch.py --live [--duration 20] [--lines 10000]
    .venv/bin/python bench/batch.py --rss [--lines 50000]

A device is ``FixedCostEngine`` at 50 inputs / 200 ms per call (250 req/s).
Interactive (paid) requests arrive as a Poisson stream at ``--load`` of the
device limit for 60 virtual seconds; the batch job is ``--lines`` requests at
priority "batch", fed as the batch driver feeds them (inference_client.batch_job):
two calls' worth (100) at t = 0, each line replaced ``RTT`` after it ends (the
driver hearing of it, the next line's way to the worker). Printed, against the
interactive-only run of the same arrivals:

- interactive p50 / p99 latency with and without the job (ratio);
- batch lines/s while interactive traffic runs, as a share of the capacity
  that traffic leaves idle (limit x (1 - load));
- the job's total time.

What this does not measure: the HTTP path, the batch driver (its windows and
database writes) or a continuous-batching engine (see batch_slot_share): --live
and --rss do the first two.

--live and --rss need the services scripts/test.sh points at (DATABASE_URL,
REDIS_URL, CELERY_BROKER_URL=amqp://...; S3 if S3_ENDPOINT_URL is set, else
`rclone serve s3` is started here) and wrk (`apt-get install -y wrk`). They start
`manage.py serve`, one Celery worker (the device) and run `manage.py
batch_worker` (BATCH_DISPATCH=none), as production does (see bench/e2e.py).

--live: the same device (50 inputs / 200 ms); interactive traffic from wrk at
about --load of the device limit (100 connections, each pausing between
requests), alone, then beside a running batch job (--lines lines uploaded and
created through /v1/files and /v1/batches), then alone again: interactive
p50 / p99 with and without the job (ratios from the same run), and the job's
lines/s meanwhile as a share of the capacity the traffic leaves idle.

--rss: a fast device (512 inputs / 10 ms), so the path is the limit; a
1,000-line and a --lines-line file uploaded (peak RSS of the serve process
while each is validated, read from VmHWM after resetting it), then each job run
by its own `manage.py batch_worker --once` process: its peak RSS (wait4's
ru_maxrss), the Celery (GPU) worker's meanwhile (VmHWM), lines/s, and the
output file's size. Memory must not grow with the
lines: the input is streamed line by line, the output streamed to the store in
S3_STREAM_PART_BYTES parts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from inference_worker.clock import VirtualClock, run_until_idle  # noqa: E402
from inference_worker.engines.base import SamplingParams, Sequence  # noqa: E402
from inference_worker.engines.fixed_cost import FixedCostEngine  # noqa: E402
from inference_worker.requests import SchedulerConfig  # noqa: E402
from inference_worker.scheduler import Scheduler  # noqa: E402

N, CALL = 50, 0.2
RTT = 0.03  # a batch line's end to the next line's arrival at the worker (s)
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

    fed = iter(range(lines))

    def line():
        i = next(fed, None)
        if i is not None:
            sched.submit(seq(f"b{i}"), "batch", on_done=done)

    def done(_):
        batch_done.append(clock.now())
        clock.call_at(clock.now() + RTT, line)

    for _ in range(2 * N):
        line()
    for i, t in enumerate(arrivals):
        clock.call_at(t, lambda i=i: sched.submit(seq(f"i{i}"), "paid",
                                                  on_done=lambda r: interactive.append(r.latency_s)))
    run_until_idle(sched, clock)
    return interactive, batch_done


# ---- the live stack (--live, --rss) ------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def object_store():
    """The S3 server the environment names, or an rclone one started here (as scripts/test.sh does)."""
    if os.environ.get("S3_ENDPOINT_URL"):
        yield {}
        return
    from tests.livesubprocess import free_port

    port = free_port()
    with tempfile.TemporaryDirectory() as root:
        proc = subprocess.Popen([str(ROOT / ".venv/bin/rclone"), "serve", "s3", root, "--addr",
                                 f"127.0.0.1:{port}", "--auth-key", "benchkey,benchsecret"],
                                env=dict(os.environ, RCLONE_CONFIG="/dev/null"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            yield {"S3_ENDPOINT_URL": f"http://127.0.0.1:{port}", "S3_BUCKET": "bench-batch",
                   "S3_ACCESS_KEY_ID": "benchkey", "S3_SECRET_ACCESS_KEY": "benchsecret"}
        finally:
            proc.terminate()
            proc.wait()


def jsonl(model: str, lines: int, tag: str) -> bytes:
    def line(i):
        return {"custom_id": f"{tag}-{i}", "method": "POST", "url": "/v1/chat/completions",
                "body": {"model": model, "max_tokens": 16,
                         "messages": [{"role": "user", "content": f"batch line {i} of {tag}"}]}}
    return b"".join(json.dumps(line(i)).encode() + b"\n" for i in range(lines))


def upload_and_create(client, model: str, lines: int, tag: str) -> tuple[dict, dict]:
    data = jsonl(model, lines, tag)
    f = client.post("/v1/files", files={"file": (f"{tag}.jsonl", data)}, data={"purpose": "batch"})
    f.raise_for_status()
    b = client.post("/v1/batches", json={"input_file_id": f.json()["id"], "endpoint": "/v1/chat/completions",
                                         "completion_window": "24h"})
    b.raise_for_status()
    return f.json(), b.json()


def reset_peak_rss(procs) -> None:
    for p in procs:  # writing 5 to clear_refs resets VmHWM (Linux)
        with contextlib.suppress(OSError), open(f"/proc/{p.pid}/clear_refs", "w") as fh:
            fh.write("5")


def peak_rss_mb(procs) -> float:
    peak = 0
    for p in procs:
        with contextlib.suppress(OSError), open(f"/proc/{p.pid}/status") as fh:
            for row in fh:
                if row.startswith("VmHWM:"):
                    peak = max(peak, int(row.split()[1]))
    return peak / 1024


def batch_worker(env: dict, *, once: bool) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "manage.py", "batch_worker", *(["--once"] if once else
                                                                           ["--poll", "0.2"])],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)


def live_stack_env(e2e, engine: dict, **extra) -> dict:
    return dict(os.environ, **e2e.STACK_ENV, BATCH_DISPATCH="none",
                INFERENCE_MODELS=json.dumps({e2e.MODEL: engine}), **extra)


def rss(lines: int) -> None:
    import httpx

    from bench import e2e

    engine = {"engine": "fixed_cost", "max_inputs": 512, "call_s": 0.01}
    with object_store() as s3:
        env = live_stack_env(e2e, engine, BATCH_WINDOW="512", **s3)
        with e2e.Stack(1, 1, env) as stack:
            key = e2e.make_keys("paid", 1)[0]
            server = e2e.tree(stack.server.pid)
            client = httpx.Client(base_url=stack.base, headers={"Authorization": f"Bearer {key}"},
                                  timeout=600)
            from django.conf import settings

            print(f"device: fixed-cost, {engine['max_inputs']} inputs / {engine['call_s'] * 1000:.0f} ms per "
                  f"call; BATCH_WINDOW 512; output parts of {settings.S3_STREAM_PART_BYTES / 2**20:.0f} MiB")
            print(f"{'lines':>7} {'file MB':>8} {'serve peak MB':>14} {'batch worker peak MB':>21} "
                  f"{'GPU worker peak MB':>19} {'lines/s':>8} {'output MB':>10}")
            rows = {}
            device = [p for w in stack.workers for p in e2e.tree(w.pid)]
            for n in (1_000, lines // 5, lines):
                reset_peak_rss(server)
                f, b = upload_and_create(client, e2e.MODEL, n, f"rss{n}")
                serve_peak = peak_rss_mb(server)
                reset_peak_rss(device)
                started = time.monotonic()
                proc = batch_worker(env, once=True)
                _, status, usage = os.wait4(proc.pid, 0)
                took = time.monotonic() - started
                device_peak = peak_rss_mb(device)
                done = client.get(f"/v1/batches/{b['id']}").json()
                if status or done["status"] != "completed":
                    raise RuntimeError(f"the {n}-line job ended {done['status']} (exit status {status})")
                out = client.get(f"/v1/files/{done['output_file_id']}").json()
                rows[n] = usage.ru_maxrss / 1024  # kilobytes on Linux
                print(f"{n:>7} {f['bytes'] / 1e6:>8.1f} {serve_peak:>14.0f} {rows[n]:>21.0f} "
                      f"{device_peak:>19.0f} {done['request_counts']['completed'] / took:>8.0f} "
                      f"{out['bytes'] / 1e6:>10.1f}")
            print(f"batch worker peak RSS, {lines} lines against 1,000: {rows[lines] / rows[1_000]:.2f}x "
                  f"({rows[lines] - rows[1_000]:+.0f} MB)")


def live(duration: float, lines: int, load: float) -> None:
    import httpx

    from bench import e2e
    from bench.probe import PROBES, Probe

    engine = {"engine": "fixed_cost", "max_inputs": N, "call_s": CALL}
    conns = 100
    with object_store() as s3:
        env = live_stack_env(e2e, engine, **s3)
        with e2e.Stack(1, 1, env) as stack:
            key = e2e.make_keys("paid", 2)
            client = httpx.Client(base_url=stack.base, headers={"Authorization": f"Bearer {key[0]}"},
                                  timeout=60)
            # Closed loop: a connection sends every latency + pause; the pause is set
            # from a warm-up's mean latency so that wrk and the probe (PROBES at a time,
            # no pause) together send about --load of the limit.
            e2e.wrk(stack.base, key[:1], conns, 3, delay_ms=500)  # the stack's first requests are slow
            warm = e2e.wrk(stack.base, key[:1], conns, 5, delay_ms=500)
            latency_ms = conns / warm["rps"] * 1000 - 500
            wrk_rate = load * LIMIT - PROBES / (latency_ms / 1000)
            pause_ms = max(0, int(conns / wrk_rate * 1000 - latency_ms))

            def measure():
                with Probe(stack.base, key[1], e2e.MODEL) as probe:
                    result = e2e.wrk(stack.base, key[:1], conns, duration, delay_ms=pause_ms, stack=stack)
                return {**result, "probe": probe.row(), "rps": result["rps"] + probe.rps,
                        "non200": result["non200"] + len(probe.refused),
                        "refused": sorted(set(map(str, probe.refused)))}

            e2e.settle()
            alone = measure()
            _, b = upload_and_create(client, e2e.MODEL, lines, "live")
            driver = batch_worker(env, once=False)
            try:
                def completed():
                    return client.get(f"/v1/batches/{b['id']}").json()["request_counts"]["completed"]
                deadline = time.monotonic() + 30
                while completed() < 200:  # the job is running: windows in flight
                    if time.monotonic() > deadline:
                        raise TimeoutError("the batch job did not start")
                    time.sleep(0.2)
                before, t0 = completed(), time.monotonic()
                cpu0 = e2e.cpu_seconds(e2e.tree(driver.pid))
                beside = measure()
                during = (completed() - before) / (time.monotonic() - t0)
                driver_cpu = e2e.cpu_seconds(e2e.tree(driver.pid)) - cpu0
                loadavg = os.getloadavg()[0]
                still = client.get(f"/v1/batches/{b['id']}").json()["status"]
                client.post(f"/v1/batches/{b['id']}/cancel")
            finally:
                driver.terminate()
                driver.wait(30)
            e2e.settle()
            again = measure()
    print(f"device: {N} inputs / {CALL * 1000:.0f} ms per call = {LIMIT:.0f} req/s; interactive: wrk, "
          f"{conns} connections pausing {pause_ms} ms (aiming at {load:.0%} of the limit), {duration:.0f} s "
          f"per run; batch job {lines} lines ({still} at the end of the run beside it)")
    print(f"{'':24} {'alone':>9} {'with batch':>11} {'alone again':>12} {'ratio':>7}")
    print(f"{'interactive req/s (all)':24} {alone['rps']:>9.0f} {beside['rps']:>11.0f} {again['rps']:>12.0f}")
    for name, field in (("interactive p50 (ms)", "p50_us"), ("interactive p99 (ms)", "p99_us")):
        base = (alone[field] + again[field]) / 2
        print(f"{name:24} {alone[field] / 1000:>9.0f} {beside[field] / 1000:>11.0f} "
              f"{again[field] / 1000:>12.0f} {beside[field] / base:>6.2f}x")
    print(f"{'non-200':24} {alone['non200']:>9} {beside['non200']:>11} {again['non200']:>12}   "
          f"(the probe's codes: {alone['refused']}, {beside['refused']}, {again['refused']})")
    print("a probe's requests beside wrk (Probe), p50 / p99 ms:")
    for i, name in enumerate(("transport", "scheduler queue", "call", "gateway and HTTP")):
        print(f"{'  ' + name:24} {alone['probe'][i]:>9} {beside['probe'][i]:>11} {again['probe'][i]:>12}")
    beside["cpu"]["batch_worker"] = driver_cpu
    for name in beside["cpu"]:  # CPU seconds per second: how many of the machine's cores each took
        # "-": not running, or below zero (PostgreSQL backends that ended took their CPU time along)
        row = [f"{r['cpu'][name] / r['elapsed']:.2f}" if r["cpu"].get(name, -1) >= 0 else "-"
               for r in (alone, beside, again)]
        print(f"{'CPU cores: ' + name:24} {row[0]:>9} {row[1]:>11} {row[2]:>12}")
    print(f"{'load average (1 min)':24} {'':>9} {loadavg:>11.1f}   (the machine: {os.cpu_count()} cores)")
    idle = LIMIT - beside["rps"]
    print(f"batch lines/s beside interactive traffic: {during:.0f} = {during / idle:.0%} of the idle "
          f"capacity ({idle:.0f} req/s: the limit less the interactive rate)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=None, help="10,000 (virtual, --live) or 50,000 (--rss)")
    ap.add_argument("--load", type=float, default=0.5)
    ap.add_argument("--live", action="store_true",
                    help="through the HTTP stack (serve, worker, batch_worker)")
    ap.add_argument("--rss", action="store_true", help="peak RSS of the batch worker: 1,000 vs --lines lines")
    ap.add_argument("--duration", type=float, default=20.0, help="seconds per wrk run (--live)")
    args = ap.parse_args()
    if args.rss:
        rss(args.lines or 50_000)
        return 0
    if args.live:
        live(args.duration, args.lines or 10_000, args.load)
        return 0
    args.lines = args.lines or 10_000
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
