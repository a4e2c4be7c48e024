"""The whole /v1 path under load: wrk against the real stack (run by hand;
prints ratios, asserts nothing).

    apt-get install -y wrk        # a C load generator: the client must not be the bottleneck
    .venv/bin/python bench/e2e.py [--quick] [--duration S] [--configs 1x1,2x1,1x2]

Needs the services scripts/test.sh points at (export DATABASE_URL, REDIS_URL,
CELERY_BROKER_URL=amqp://...; the database is migrated by `manage.py serve`).
For each configuration SxD (S `serve` processes behind one port, D worker
processes = devices, each a fixed-cost engine of 50 inputs / 200 ms per call,
so D x 250 req/s is the device limit) it starts the stack, makes a paid key
with rate limits out of the way, and prints:

- per connection count (1, 50, 100, 200, 400): req/s and its share of the
  device limit, p50 / p99 latency divided by the call time, non-200 answers;
- the gateway's own overhead: latency at one connection minus the call time;
- CPU milliseconds per request of each process (server, workers, wrk, Redis,
  RabbitMQ, PostgreSQL), read from /proc (psutil) before and after each run;
- fairness (--fairness): paid traffic at about half the device limit alone,
  then beside a free-tier flood (F free keys, each at 10x its per-key limit):
  paid p99 with / without the flood, the flood's answers by status, and
  whether honouring a refusal's Retry-After gets a 200.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
MODEL = "bench-e2e"
CALL_S, MAX_INPUTS = 0.2, 50
ENGINE = {"engine": "fixed_cost", "max_inputs": MAX_INPUTS, "call_s": CALL_S}
os.environ["INFERENCE_MODELS"] = json.dumps({MODEL: ENGINE})
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402
import psutil  # noqa: E402

from inference_protocol.backend import live_workers  # noqa: E402
from tests.factories import ApiKeyFactory, UserFactory  # noqa: E402
from tests.livesubprocess import free_port  # noqa: E402

BODY = {"model": MODEL, "messages": [{"role": "user", "content": "benchmark the whole path"}],
        "max_tokens": 16}
# Rate limits and the capacity controller out of the way: this measures the path.
STACK_ENV = {
    "HEARTBEAT_INTERVAL_S": "0.5", "LOG_LEVEL": "WARNING", "RATE_LIMIT_PAID_RPM": "100000000",
    "RATE_LIMIT_PAID_TPM": "10000000000", "CAPACITY_NOMINAL_TOKENS_PER_S": "100000000",
    "INFERENCE_MAX_QUEUE_PER_MODEL": "100000",
}

WRK_LUA = """
wrk.method = "POST"
wrk.body = os.getenv("BENCH_BODY")
wrk.headers["Content-Type"] = "application/json"
local keys = {}
for k in string.gmatch(os.getenv("BENCH_KEYS"), "[^,]+") do table.insert(keys, k) end
local pause = tonumber(os.getenv("BENCH_DELAY_MS") or "0")
-- random: exponential pauses of that mean (connections drift apart like independent clients)
local random_pauses = os.getenv("BENCH_PAUSES") == "random"
local threads = {}
local counter = 0
function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end
function init(args)
  statuses = {}
  n = 0
  math.randomseed(os.time() * 1000 + id)
end
function request()
  -- one key per connection request, round robin over the keys
  n = n + 1
  local key = keys[((n + id) % #keys) + 1]
  return wrk.format(nil, nil, {["Authorization"] = "Bearer " .. key}, nil)
end
function delay()
  if random_pauses then return math.floor(-pause * math.log(1 - math.random()) + 0.5) end
  return pause
end
function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end
function done(summary, latency, requests)
  local all = {}
  for _, t in ipairs(threads) do
    local s = t:get("statuses")
    for code, count in pairs(s) do all[code] = (all[code] or 0) + count end
  end
  local parts = {}
  for code, count in pairs(all) do table.insert(parts, string.format('"%d": %d', code, count)) end
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests": %d, "duration_us": %d, "connect": %d, "read": %d, "write": %d, ' ..
    '"timeout": %d, "p50_us": %d, "p99_us": %d, "max_us": %d, "statuses": {%s}}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max, table.concat(parts, ", ")))
end
"""


# Each worker's pool and prefetch flags (--worker-flags); none: the worker sizes itself.
WORKER_FLAGS: list[str] = []


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


# ---- processes and their CPU -------------------------------------------------

def cpu_by_pid(procs: list[psutil.Process]) -> dict[int, float]:
    out = {}
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            out[proc.pid] = sum(proc.cpu_times()[:2])  # user + system
    return out


def cpu_seconds(procs: list[psutil.Process]) -> float:
    return sum(cpu_by_pid(procs).values())


def named(*names: str) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["name"]) if p.info["name"] in names]


def tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


class Stack:
    """S serve processes (uvicorn workers behind one port) and D Celery workers."""

    def __init__(self, serve: int, devices: int, env: dict):
        self.serve, self.devices, self.env = serve, devices, env
        self.procs: list[subprocess.Popen] = []
        self.logs = tempfile.TemporaryDirectory()
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"

    def spawn(self, name: str, args: list[str], env: dict | None = None,
              checkout: Path = ROOT) -> subprocess.Popen:
        """A process of the stack (stopped with it); ``env``: its own, else the stack's;
        ``checkout``: the checkout whose code it runs (another git worktree, to compare a change)."""
        log = open(Path(self.logs.name) / f"{name}.log", "w")  # noqa: SIM115 (closed with the dir)
        proc = subprocess.Popen([sys.executable, *args], cwd=checkout,
                                env={**(env or self.env), "PYTHONUNBUFFERED": "1"},
                                stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def spawn_worker(self, name: str, model: str = MODEL, env: dict | None = None,
                     checkout: Path = ROOT) -> subprocess.Popen:
        return self.spawn(name, [
            "-m", "celery", "-A", "config", "worker", "-Q", f"gpu.{model}", *WORKER_FLAGS, "-l", "warning",
            "-n", f"bench-{name}-{uuid.uuid4().hex[:6]}@%h",
            "--without-mingle", "--without-gossip"], env, checkout)

    def __enter__(self) -> Stack:
        self.workers = [self.spawn_worker(f"worker{i}") for i in range(self.devices)]
        self.server = self.spawn("serve", ["manage.py", "serve", "--no-demo", "--port", str(self.port),
                                            "--workers", str(self.serve)])
        deadline = time.monotonic() + 90
        while len(live_workers(MODEL)) < self.devices or not self._up():
            if time.monotonic() > deadline:
                raise TimeoutError(f"stack did not start; logs in {self.logs.name}")
            time.sleep(0.2)
        return self

    def _up(self) -> bool:
        try:
            return httpx.get(self.base + "/login/", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    def groups(self) -> dict[str, list[psutil.Process]]:
        return {"server": tree(self.server.pid),
                "workers": [p for w in self.workers for p in tree(w.pid)],
                "redis": named("redis-server"), "rabbitmq": named("beam.smp"),
                "postgres": named("postgres")}

    def __exit__(self, *exc):
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.logs.cleanup()


# ---- wrk -------------------------------------------------------------------------

def wrk(base: str, keys: list[str], connections: int, duration: float, *, delay_ms: int = 0,
        random_pauses: bool = False, body: dict | None = None, stack: Stack | None = None) -> dict:
    """One wrk run; returns its summary plus CPU seconds per process group. Each connection
    pauses ``delay_ms`` between requests, or a random time of that mean (``random_pauses``)."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_LUA)
    env = dict(os.environ, BENCH_BODY=json.dumps(body or BODY), BENCH_KEYS=",".join(keys),
               BENCH_DELAY_MS=str(delay_ms), BENCH_PAUSES="random" if random_pauses else "fixed")
    threads = max(1, min(2, connections))
    groups = stack.groups() if stack else {}
    before = {name: cpu_by_pid(procs) for name, procs in groups.items()}
    started = time.monotonic()
    seconds = f"{max(1, round(duration))}s"
    proc = subprocess.Popen(["wrk", "-t", str(threads), "-c", str(connections), "-d", seconds,
                             "--timeout", "30s", "-s", script.name, f"{base}/v1/chat/completions"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wrk_proc = psutil.Process(proc.pid)
    wrk_cpu = 0.0
    out_lines = []
    for line in proc.stdout:  # keep sampling wrk's own CPU until it exits
        out_lines.append(line)
        with contextlib.suppress(psutil.NoSuchProcess):
            wrk_cpu = cpu_seconds([wrk_proc])
    proc.wait()
    elapsed = time.monotonic() - started
    os.unlink(script.name)
    line = next((x for x in out_lines if x.startswith("WRKJSON ")), None)
    if line is None:
        raise RuntimeError("wrk printed no summary:\n" + "".join(out_lines))
    result = json.loads(line[len("WRKJSON "):])
    # Processes alive at both ends: one gone in between (a PostgreSQL backend) would count negative.
    after = {name: cpu_by_pid(procs) for name, procs in groups.items()}
    result["cpu"] = {name: sum(t - before[name][pid] for pid, t in after[name].items() if pid in before[name])
                     for name in groups}
    result["cpu"]["wrk"] = wrk_cpu
    result["elapsed"] = elapsed
    result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
    result["non200"] = sum(c for s, c in result["statuses"].items() if s != "200") + sum(
        result[k] for k in ("connect", "read", "write", "timeout"))
    return result


def settle(timeout_s: float = 15.0) -> None:
    """Wait until every device is idle: when wrk stops, its open requests are
    cancelled, but a call already on the device runs to its end, and the next
    level's first requests must not wait behind it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        beats = live_workers(MODEL)
        if beats and all(b["running"] == 0 and b["queue_length"] == 0 for b in beats):
            time.sleep(0.6)  # one heartbeat interval more: the last beat may predate a call
            if all(b["running"] == 0 for b in live_workers(MODEL)):
                return
        time.sleep(0.1)


def make_keys(tier: str, count: int) -> list[str]:
    run = uuid.uuid4().hex[:8]
    return [ApiKeyFactory.create_with_raw(user=UserFactory(username=f"bench-{tier}-{run}-{i}"),
                                          tier=tier)[1] for i in range(count)]


def cpu_line(result: dict) -> str:
    ok = max(1, result["statuses"].get("200", 0))
    return "  ".join(f"{name} {1000 * secs / ok:.2f}" for name, secs in result["cpu"].items())


# ---- the runs ----------------------------------------------------------------------

def throughput(serve: int, devices: int, levels: list[int], duration: float) -> None:
    limit = devices * MAX_INPUTS / CALL_S
    key = make_keys("paid", 1)
    # Several devices: an idle device holds a batch open for call time / devices
    # (max_wait_ms), as in every 1x2 figure of docs/benchmarks.md.
    engine = {**ENGINE, "scheduler": {"max_wait_ms": CALL_S * 1000 / devices}} if devices > 1 else ENGINE
    env = dict(os.environ, **STACK_ENV, INFERENCE_MODELS=json.dumps({MODEL: engine}))
    with Stack(serve, devices, env) as stack:
        wrk(stack.base, key, 200, 3, stack=stack)  # warm up: connections, pools, every worker thread
        print(f"\n== {serve} serve process(es), {devices} device(s): limit {limit:.0f} req/s "
              f"(fixed-cost engine, {MAX_INPUTS} inputs / {CALL_S * 1000:.0f} ms per call)"
              + (f"; one shared queue; idle hold {CALL_S * 1000 / devices:.0f} ms" if devices > 1 else ""))
        print(f"{'conns':>6} {'req/s':>8} {'share':>6} {'p50/call':>9} {'p99/call':>9} {'non-200':>8}"
              "   CPU ms per request by process")
        for conns in levels:
            settle()
            r = wrk(stack.base, key, conns, duration, stack=stack)
            print(f"{conns:>6} {r['rps']:>8.1f} {r['rps'] / limit:>6.2f} "
                  f"{r['p50_us'] / 1e6 / CALL_S:>9.2f} {r['p99_us'] / 1e6 / CALL_S:>9.2f} "
                  f"{r['non200']:>8}   {cpu_line(r)}")
            if conns == 1:
                print(f"{'':>6} gateway overhead at one connection: p50 "
                      f"{r['p50_us'] / 1000 - CALL_S * 1000:.1f} ms, p99 "
                      f"{r['p99_us'] / 1000 - CALL_S * 1000:.1f} ms over the {CALL_S * 1000:.0f} ms call")


def fairness(duration: float, free_keys: int) -> None:
    """Paid at ~half the device alone, then beside a free flood at 10x each key's limit."""
    free_rpm = 60
    env = dict(os.environ, **STACK_ENV, RATE_LIMIT_FREE_RPM=str(free_rpm), RATE_LIMIT_FREE_TPM="1000000")
    paid, free = make_keys("paid", 1), make_keys("free", free_keys)
    # One request per connection every 1/(10 x per-key rate) seconds when answered at once (a 429).
    pause_ms = int(60_000 / free_rpm / 10)
    with Stack(1, 1, env) as stack:
        wrk(stack.base, paid, 10, 2, stack=stack)
        paid_conns = 30  # about 125 req/s at ~240 ms per request: half of 250
        alone = wrk(stack.base, paid, paid_conns, duration, stack=stack)
        flood_proc = subprocess.Popen(
            [sys.executable, __file__, "--flood", stack.base, ",".join(free), str(pause_ms),
             str(duration + FLOOD_LEAD_S + 2)],
            stdout=subprocess.PIPE, text=True)
        # A free key's bucket holds a minute's burst: the flood must drain it before the
        # paid run starts, or every flood request is a 200 (a bench, not a test).
        time.sleep(FLOOD_LEAD_S)
        beside = wrk(stack.base, paid, paid_conns, duration, stack=stack)
        flood = json.loads(flood_proc.communicate()[0].splitlines()[-1])
        retry_ok = honour_retry_after(stack.base, free[0])
    print(f"\n== fairness: paid alone {alone['rps']:.0f} req/s p99 {alone['p99_us'] / 1000:.0f} ms; "
          f"beside a free flood {beside['rps']:.0f} req/s p99 {beside['p99_us'] / 1000:.0f} ms "
          f"(ratio {beside['p99_us'] / alone['p99_us']:.2f}, goal <= 1.5); paid non-200: "
          f"{alone['non200']} / {beside['non200']}")
    print(f"   free flood: {free_keys} keys x 10x their {free_rpm}/min limit: answers {flood['statuses']}; "
          f"refusals with Retry-After: {flood['with_retry_after']}/{flood['refused']}; "
          f"honouring Retry-After got a 200: {retry_ok}")


FLOOD_CONNS_PER_KEY = 4
FLOOD_LEAD_S = 10  # a minute's burst (60 requests) drained at 10x the rate, with margin


def flood(base: str, keys: str, pause_ms: str, duration: str) -> None:
    """The free flood, as its own wrk process, reporting statuses and Retry-After presence."""
    # Several connections per key: at 10x its rate a key sends every 100 ms, longer than
    # an answered request takes on one connection.
    result = wrk(base, keys.split(","), FLOOD_CONNS_PER_KEY * len(keys.split(",")), float(duration),
                 delay_ms=int(pause_ms) * FLOOD_CONNS_PER_KEY)
    refused = result["statuses"].get("429", 0)
    # wrk sees statuses, not headers: sample refusals directly for Retry-After.
    with httpx.Client(base_url=base, timeout=10) as client:
        sample = [client.post("/v1/chat/completions", json=BODY,
                              headers={"Authorization": f"Bearer {keys.split(',')[0]}"}) for _ in range(20)]
    with_ra = sum(1 for r in sample if r.status_code == 429 and r.headers.get("Retry-After"))
    refused_sample = sum(1 for r in sample if r.status_code == 429)
    print(json.dumps({"statuses": result["statuses"], "refused": refused_sample,
                      "with_retry_after": with_ra, "wrk_refused": refused}))


def honour_retry_after(base: str, key: str) -> bool:
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=base, timeout=30) as client:
        for _ in range(10):
            r = client.post("/v1/chat/completions", json=BODY, headers=headers)
            if r.status_code != 429:
                continue
            time.sleep(float(r.headers["Retry-After"]))  # what a well-behaved client does
            return client.post("/v1/chat/completions", json=BODY, headers=headers).status_code == 200
    return False


def main() -> None:
    global WORKER_FLAGS
    if len(sys.argv) > 1 and sys.argv[1] == "--flood":
        flood(*sys.argv[2:6])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="3 s per level, 1x1 only, no fairness")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--configs", default="1x1,2x1,1x2", help="SERVExDEVICES, comma separated")
    parser.add_argument("--levels", default="1,50,100,200,400")
    parser.add_argument("--fairness", action="store_true")
    parser.add_argument("--free-keys", type=int, default=20)
    parser.add_argument("--worker-flags", default="", help="each worker's pool flags (default: none)")
    args = parser.parse_args()
    WORKER_FLAGS = args.worker_flags.split()
    duration = 3.0 if args.quick else args.duration
    configs = ["1x1"] if args.quick else [c for c in args.configs.split(",") if c]  # "": fairness only
    levels = [int(x) for x in args.levels.split(",")]
    print(f"wrk on this machine ({os.cpu_count()} cores, shared by wrk and the whole stack), "
          f"{duration:.0f} s per level, worker flags: {' '.join(WORKER_FLAGS) or 'none (self-sized)'}")
    for config in configs:
        serve, devices = (int(x) for x in config.split("x"))
        throughput(serve, devices, levels, duration)
    if args.fairness and not args.quick:
        fairness(args.duration, args.free_keys)


if __name__ == "__main__":
    main()
