"""The gateway's ceiling and its overload answers (issue #37 item 2; run by hand,
prints ratios, asserts nothing).

    .venv/bin/python bench/ceiling.py [--ceiling] [--flood] [--duration 10] [--rounds 2]

Neither flag: both. Needs wrk and the services bench/e2e.py needs (DATABASE_URL,
migrated; REDIS_URL; CELERY_BROKER_URL=amqp://...), and LiteLLM's proxy in a venv of
its own (`pip install 'litellm[proxy]'`; --litellm BIN, '' to leave it out).

--ceiling: devices that answer at once, wrk at 200 connections for D seconds per run
after a 5 s warm-up of each; for S = 1, 2 one stack of ours and one LiteLLM proxy,
their runs alternating round after round under the same load:
- ours, S serve processes and two models of one device each: a fixed-cost engine of
  512 inputs / 2 ms per call (256,000 req/s: the gateway is the limit), and the
  `upstream` engine on bench/fake_upstream.py answering at once (no call time, no
  token time); each run loads one model and charges its worker only;
- LiteLLM's proxy with S uvicorn workers: a master key, no database, no callbacks,
  its access log off (LITELLM_LOG=ERROR), its one model on the same fake upstream
  (non-streaming, as wrk's body asks).
Per configuration: req/s, p50, p99, non-200 answers, CPU ms per 200 by process group
(psutil: server, workers, Redis, RabbitMQ, PostgreSQL, the fake upstream, LiteLLM, wrk),
the groups' share of the machine's cores and the machine's busy share (the difference
is other work on the same cores); then ours / LiteLLM for each pairing. Redis,
RabbitMQ and PostgreSQL are shared services: their CPU includes whatever else uses them.

--flood: 1 serve x 1 device (fixed-cost), a free key at RATE_LIMIT_FREE_RPM=1 under wrk
at 400 connections as fast as answered, alone (429s/s: the serve process's ceiling when
saturated; its CPU; Retry-After on 20 sampled refusals); then a paid key at about
--paid-rate req/s, alone and beside the flood at about --flood-rate req/s whose
connections pause at random (independent clients), in step (bursts), and at random
against a second serve process (the cores it shares, not the event loop): p99 beside / alone.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
import psutil  # noqa: E402

from bench.e2e import (  # noqa: E402  (sets Django up)
    BODY,
    MODEL,
    ROOT,
    STACK_ENV,
    Stack,
    make_keys,
    settle,
    tree,
    wrk,
)
from inference_protocol.backend import live_workers  # noqa: E402
from tests.livesubprocess import free_port  # noqa: E402

CALL_S, MAX_INPUTS = 0.002, 512
FIXED = {"engine": "fixed_cost", "max_inputs": MAX_INPUTS, "call_s": CALL_S}
UP_MODEL = "bench-upstream"  # our upstream engine's model, and LiteLLM's
UP_BODY = {**BODY, "model": UP_MODEL}
LITELLM = "/work/litellm-venv/bin/litellm"
# The flood beside the paid key, label: (random pauses, sent to another serve process).
FLOOD_CASES = {"independent clients": (True, False), "lockstep": (False, False),
               "on another serve process": (True, True)}
SAMPLE = 20  # flood refusals checked for Retry-After (one at a time, each behind the flood)
GATEWAY = ("server", "workers", "redis", "rabbitmq", "postgres", "litellm")  # not wrk, not the upstream


@dataclasses.dataclass
class Target:
    """What wrk loads: a base URL, the keys and body to send, the process groups to charge."""

    label: str
    base: str
    keys: list[str]
    groups: Callable[[], dict[str, list[psutil.Process]]]
    body: dict = dataclasses.field(default_factory=lambda: BODY)


def busy_seconds() -> float:
    t = psutil.cpu_times()
    return t.user + t.nice + t.system + t.irq + t.softirq + getattr(t, "steal", 0.0)


def run(target: Target, connections: int, duration: float, rate: float = 0,
        random_pauses: bool = False) -> dict:
    """One wrk run (bench/e2e.py's), plus the groups' and the machine's share of the cores;
    ``rate``: about that many requests/s in all (each connection pauses between requests,
    a fixed time or, ``random_pauses``, a random one of that mean)."""
    busy = busy_seconds()
    delay_ms = round(connections * 1000 / rate) if rate else 0
    r = wrk(target.base, target.keys, connections, duration, body=target.body, stack=target,
            delay_ms=delay_ms, random_pauses=random_pauses)
    seconds = r["duration_us"] / 1e6
    r["busy"] = (busy_seconds() - busy) / r["elapsed"] / os.cpu_count()
    r["share"] = sum(r["cpu"].values()) / seconds / os.cpu_count()
    r["gateway_ms"] = 1000 * sum(v for k, v in r["cpu"].items() if k in GATEWAY) / max(
        1, r["statuses"].get("200", 0))
    return r


def per_answer(r: dict, status: str) -> str:
    """CPU ms per answer of ``status``, by process group."""
    n = max(1, r["statuses"].get(status, 0))
    return "  ".join(f"{name} {1000 * secs / n:.2f}" for name, secs in r["cpu"].items())


def transport_errors(r: dict) -> int:
    return sum(r[k] for k in ("connect", "read", "write", "timeout"))


def line(label: str, r: dict) -> str:
    return (f"  {label:<24} {r['rps']:>7.0f} req/s  p50 {r['p50_us'] / 1000:>6.1f}  p99 "
            f"{r['p99_us'] / 1000:>6.1f} ms  non-200 {r['non200']:>5}  gateway CPU {r['gateway_ms']:.2f} "
            f"ms/req  cores: measured {r['share']:.2f}, machine {r['busy']:.2f}\n"
            f"  {'':<24} CPU ms per request: {per_answer(r, '200')}")


# ---- the fake upstream and LiteLLM's proxy ---------------------------------------

def wait_for(url: str, what: str, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not start")
        time.sleep(0.5)


def stop(proc: subprocess.Popen) -> None:
    """Stop a process and the children it forked (uvicorn's workers)."""
    with_children = tree(proc.pid)
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
    for child in with_children[1:]:
        if child.is_running():
            child.kill()


class FakeUpstream:
    """bench/fake_upstream.py under uvicorn, answering at once."""

    def __enter__(self) -> FakeUpstream:
        port = free_port()
        self.base = f"http://127.0.0.1:{port}/v1"
        env = dict(os.environ, FAKE_UPSTREAM_CALL_S="0", FAKE_UPSTREAM_PER_TOKEN_S="0")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "bench.fake_upstream:app", "--host", "127.0.0.1",
             "--port", str(port), "--log-level", "warning", "--no-access-log"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        wait_for(self.base + "/models", "the fake upstream")
        return self

    def groups(self) -> dict[str, list[psutil.Process]]:
        return {"upstream": tree(self.proc.pid)}

    def __exit__(self, *exc):
        stop(self.proc)


class LiteLLM:
    """LiteLLM's proxy with ``workers`` uvicorn workers, its model on the fake upstream."""

    def __init__(self, binary: str, workers: int, upstream: FakeUpstream):
        self.binary, self.workers, self.upstream = binary, workers, upstream

    def __enter__(self) -> LiteLLM:
        self.dir = tempfile.TemporaryDirectory()
        self.key = "sk-" + secrets.token_hex(32)
        config = {"model_list": [{"model_name": UP_MODEL, "litellm_params": {
            "model": "openai/fake", "api_base": self.upstream.base, "api_key": "none"}}],
            "litellm_settings": {"telemetry": False, "callbacks": []},
            "general_settings": {"master_key": self.key}}
        path = Path(self.dir.name) / "config.yaml"
        path.write_text(json.dumps(config))  # JSON is YAML
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        # Its own environment: no DATABASE_URL or REDIS_URL for it to pick up.
        env = {"PATH": os.environ["PATH"], "HOME": self.dir.name, "LITELLM_LOG": "ERROR",
               "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        self.log = open(Path(self.dir.name) / "litellm.log", "w")  # noqa: SIM115 (closed on exit)
        self.proc = subprocess.Popen(
            [self.binary, "--config", str(path), "--host", "127.0.0.1", "--port", str(port),
             "--num_workers", str(self.workers)],
            cwd=self.dir.name, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        try:
            wait_for(self.base + "/health/liveliness", "LiteLLM's proxy")
        except TimeoutError:
            self.__exit__()
            raise
        return self

    def target(self) -> Target:
        label = f"LiteLLM {self.workers} worker" + ("s" if self.workers > 1 else "")
        return Target(label, self.base, [self.key],
                      lambda: {"litellm": tree(self.proc.pid), **self.upstream.groups()}, UP_BODY)

    def __exit__(self, *exc):
        stop(self.proc)
        self.log.close()
        self.dir.cleanup()


# ---- the ceiling ------------------------------------------------------------------

def stack_env(models: dict) -> dict:
    return dict(os.environ, **STACK_ENV, INFERENCE_MODELS=json.dumps(models))


def our_targets(stack: Stack, serve: int, engines: list[str], upstream: FakeUpstream) -> list[Target]:
    """One stack, two models, a device each: the fixed-cost one and the upstream one."""
    worker = stack.spawn_worker("upstream", UP_MODEL)
    deadline = time.monotonic() + 90
    while not live_workers(UP_MODEL):
        if time.monotonic() > deadline:
            raise TimeoutError("the upstream model's worker did not start")
        time.sleep(0.2)
    key = make_keys("paid", 1)
    fixed = Target(f"ours {serve}x1 fixed-cost", stack.base, key,
                   lambda: {**stack.groups(), "workers": tree(stack.workers[0].pid)})
    up = Target(f"ours {serve}x1 upstream", stack.base, key,
                lambda: {**stack.groups(), "workers": tree(worker.pid), **upstream.groups()}, UP_BODY)
    return [t for name, t in (("fixed-cost", fixed), ("upstream", up)) if name in engines]


def ceiling(args: argparse.Namespace) -> None:
    results: dict[str, list[dict]] = {}
    conns, duration = args.connections, args.duration
    print(f"\n== ceiling: wrk at {conns} connections, {duration:.0f} s per run, {args.rounds} round(s); "
          f"fixed-cost device {MAX_INPUTS} inputs / {CALL_S * 1000:.0f} ms per call; the fake upstream "
          f"answers at once (CALL_S = PER_TOKEN_S = 0)")
    with FakeUpstream() as upstream:
        models = {MODEL: FIXED, UP_MODEL: {"engine": "upstream", "base_url": upstream.base,
                                           "model": "fake", "max_batch_size": MAX_INPUTS}}
        for serve in args.serves:
            lite = LiteLLM(args.litellm, serve, upstream) if args.litellm else None
            started = time.monotonic()
            with lite or contextlib.nullcontext(), Stack(serve, 1, stack_env(models)) as stack:
                targets = our_targets(stack, serve, args.engines, upstream)
                targets += [lite.target()] if lite else []
                print(f"  (LiteLLM and our stack started in {time.monotonic() - started:.0f} s)", flush=True)
                for target in targets:
                    run(target, conns, 5)  # warm up: every process up, its pools open
                for _ in range(args.rounds):
                    for target in targets:
                        settle()
                        r = run(target, conns, duration)
                        results.setdefault(target.label, []).append(r)
                        print(line(target.label, r), flush=True)
    summary(results, args.serves)


def med(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def summary(results: dict[str, list[dict]], serves: list[int]) -> None:
    print(f"\n== ceiling, medians over runs (goal: >= 1,000 req/s at p99 < 250 ms on {os.cpu_count()} "
          "cores; >= 5x LiteLLM)")
    print(f"  {'configuration':<24} {'runs':>4} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'non-200':>8} "
          f"{'gw CPU ms':>9} {'machine':>7}")
    for label, runs in results.items():
        print(f"  {label:<24} {len(runs):>4} {med(runs, 'rps'):>8.0f} {med(runs, 'p50_us') / 1000:>7.1f} "
              f"{med(runs, 'p99_us') / 1000:>7.1f} {sum(r['non200'] for r in runs):>8} "
              f"{med(runs, 'gateway_ms'):>9.2f} {med(runs, 'busy'):>7.2f}")
        groups = runs[0]["cpu"].keys()
        ok = sum(r["statuses"].get("200", 0) for r in runs) or 1
        print(f"  {'':<24} CPU ms per request: " + "  ".join(
            f"{g} {1000 * sum(r['cpu'][g] for r in runs) / ok:.2f}" for g in groups))
        if label.startswith("ours"):
            met = med(runs, "rps") >= 1000 and med(runs, "p99_us") < 250_000
            print(f"  {'':<24} >= 1,000 req/s at p99 < 250 ms: {'met' if met else 'not met'}")
    print("\n  ours / LiteLLM (req/s ratio goal >= 5; p99 and gateway CPU per request: LiteLLM / ours)")
    for serve in serves:
        lite = results.get(f"LiteLLM {serve} worker" + ("s" if serve > 1 else ""))
        for name in ("upstream", "fixed-cost"):
            ours = results.get(f"ours {serve}x1 {name}")
            if not (lite and ours):
                continue
            print(f"  {serve} serve x 1 {name:<10} vs LiteLLM {serve}: req/s "
                  f"{med(ours, 'rps') / med(lite, 'rps'):.2f}x; p99 "
                  f"{med(lite, 'p99_us') / med(ours, 'p99_us'):.2f}x lower; gateway CPU per request "
                  f"{med(lite, 'gateway_ms') / med(ours, 'gateway_ms'):.2f}x less")


# ---- the flood ---------------------------------------------------------------------

def in_thread(fn: Callable[[], dict]) -> tuple[threading.Thread, dict]:
    out: dict = {}
    thread = threading.Thread(target=lambda: out.update(fn()))
    thread.start()
    return thread, out


def retry_after_sample(base: str, key: str, n: int) -> tuple[int, int, list[float]]:
    with httpx.Client(base_url=base, timeout=30) as client:
        answers = [client.post("/v1/chat/completions", json=BODY, headers={"Authorization": f"Bearer {key}"})
                   for _ in range(n)]
    refused = [a for a in answers if a.status_code == 429]
    values = [float(a.headers["Retry-After"]) for a in refused if a.headers.get("Retry-After")]
    return len(refused), len(values), values


def flood(args: argparse.Namespace) -> None:
    duration = args.duration
    env = dict(stack_env({MODEL: FIXED}), RATE_LIMIT_FREE_RPM="1", RATE_LIMIT_FREE_TPM="1000000")
    with Stack(1, 1, env) as stack:
        other_port = free_port()
        stack.spawn("serve-other", ["manage.py", "serve", "--no-demo", "--port", str(other_port)])
        wait_for(f"http://127.0.0.1:{other_port}/login/", "the other serve process")
        paid = Target("paid", stack.base, make_keys("paid", 1), stack.groups)
        free = Target("free flood", stack.base, make_keys("free", 1), stack.groups)
        elsewhere = dataclasses.replace(free, base=f"http://127.0.0.1:{other_port}")
        run(paid, args.paid_connections, 3)  # warm up
        settle()
        alone = run(paid, args.paid_connections, duration, args.paid_rate)
        thread, refusals = in_thread(lambda: run(free, args.flood_connections, duration))
        time.sleep(2)  # sample once the flood runs (a bench, not a test)
        refused, with_ra, values = retry_after_sample(stack.base, free.keys[0], SAMPLE)
        thread.join()
        beside = {}
        for case, (random_pauses, other) in FLOOD_CASES.items():
            settle()
            thread, flood_run = in_thread(lambda r=random_pauses, t=elsewhere if other else free: run(
                t, args.flood_connections, duration + 4, args.flood_rate, r))
            time.sleep(2)
            beside[case] = (run(paid, args.paid_connections, duration, args.paid_rate), flood_run)
            thread.join()
    rate = refusals["statuses"].get("429", 0) / (refusals["duration_us"] / 1e6)
    serve_cores = refusals["cpu"]["server"] / (refusals["duration_us"] / 1e6)
    print(f"\n== flood: a free key at 1 req/min, wrk at {args.flood_connections} conns, 1 serve x 1 device")
    saturated = "saturated: the refusal rate is its ceiling" if serve_cores > 0.9 else "not saturated"
    print(f"  flood alone: {rate:.0f} 429s/s per serve process (goal >= 5,000); answers "
          f"{refusals['statuses']}, transport errors {transport_errors(refusals)}; "
          f"p50 {refusals['p50_us'] / 1000:.1f} ms p99 {refusals['p99_us'] / 1000:.1f} ms")
    print(f"  the serve process used {serve_cores:.2f} of a core ({saturated}); the machine "
          f"{refusals['busy']:.2f} of its cores; CPU ms per 429: {per_answer(refusals, '429')}")
    print(f"  Retry-After: {with_ra} of the {refused} refusals among {SAMPLE} sampled requests carried it"
          + (f" (values {min(values):.0f}-{max(values):.0f} s)" if values else ""))
    print(f"  paid at about {args.paid_rate:.0f} req/s ({args.paid_connections} connections), alone and "
          f"beside the flood at about {args.flood_rate:.0f} req/s:")
    print(line(f"paid {args.paid_connections} conns alone", alone))
    for shape, (paid_run, flood_run) in beside.items():  # the last: what the shared cores alone add
        flood_rate = flood_run["statuses"].get("429", 0) / (flood_run["duration_us"] / 1e6)
        print(line(f"paid beside, {shape}", paid_run))
        ratios = (f"paid p99 beside / alone {paid_run['p99_us'] / alone['p99_us']:.2f} (goal: same), p50 "
                  f"{paid_run['p50_us'] / alone['p50_us']:.2f}, req/s {paid_run['rps'] / alone['rps']:.2f}"
                  if paid_run["requests"] else f"the paid key got no answer in {duration:.0f} s")
        print(f"  flood ({shape}): {flood_rate:.0f} 429s/s; {ratios}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ceiling", action="store_true")
    parser.add_argument("--flood", action="store_true")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--serves", default="1,2", help="serve processes (and LiteLLM workers) to try")
    parser.add_argument("--engines", default="fixed-cost,upstream")
    parser.add_argument("--litellm", default=LITELLM, help="LiteLLM's `litellm` command; '' leaves it out")
    parser.add_argument("--flood-connections", type=int, default=400)
    parser.add_argument("--paid-connections", type=int, default=20)
    parser.add_argument("--paid-rate", type=float, default=100, help="the paid key's req/s (0: closed loop)")
    parser.add_argument("--flood-rate", type=float, default=5000,
                        help="the flood's req/s beside the paid key (0: as fast as answered)")
    args = parser.parse_args()
    args.serves = [int(s) for s in args.serves.split(",")]
    args.engines = args.engines.split(",")
    both = not (args.ceiling or args.flood)
    print(f"{os.cpu_count()} cores shared by wrk, the stacks, the fake upstream and LiteLLM; load average "
          f"before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.ceiling or both:
        ceiling(args)
    if args.flood or both:
        flood(args)


if __name__ == "__main__":
    main()
