"""Gateway benchmark (run by hand; prints ratios, asserts nothing).

    .venv/bin/python bench/gateway.py [--requests 400]   # with scripts/test.sh's variables

Needs PostgreSQL (DATABASE_URL, migrated), Redis (REDIS_URL) and a broker
(CELERY_BROKER_URL). It starts its own Celery worker (fixed-cost engine, 50
inputs / 200 ms per call, under the model name "bench-fixed-cost" so it shares
no queue) and a uvicorn server, and prints:
- admission: p50 / p99 of one admission decision (the Lua script) on Redis;
- 429 vs 200: p50 of a 429 under a burst vs. a 200 from a trivial view (the
  login page) on the same server, and their ratio;
- end-to-end: requests/s through HTTP -> admission -> Celery -> worker -> SSE-less
  JSON, vs. the engine's own limit (inputs per call / call time).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
MODEL = "bench-fixed-cost"
ENGINE = {"engine": "fixed_cost", "max_inputs": 50, "call_s": 0.2}
os.environ["INFERENCE_MODELS"] = json.dumps({MODEL: ENGINE})
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import logging  # noqa: E402

import httpx  # noqa: E402

logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise

from inference_client import admission, capacity  # noqa: E402
from inference_protocol.backend import live_workers  # noqa: E402
from tests.factories import ApiKeyFactory, UserFactory  # noqa: E402
from tests.livesubprocess import free_port, running_server  # noqa: E402


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def bench_admission(n: int) -> tuple[float, float]:
    capacity.tick([MODEL])
    times = []
    for i in range(n):
        buckets = admission.key_buckets(key_id="bench", tier="paid", tokens=10) + [
            admission.global_bucket(model=MODEL, tier="paid", tokens=10)]
        started = time.perf_counter()
        await admission.admit(buckets=buckets, model=MODEL, request_id=f"b{i}", check_queue=False)
        times.append(time.perf_counter() - started)
    return pct(times, 0.5) * 1000, pct(times, 0.99) * 1000


async def timed(client: httpx.AsyncClient, method: str, path: str, **kwargs) -> tuple[int, float]:
    started = time.perf_counter()
    try:
        status = (await client.request(method, path, **kwargs)).status_code
    except httpx.TransportError:
        status = 0  # connection refused/reset under the burst: counted, not fatal
    return status, time.perf_counter() - started


async def bench_http(base: str, free_key: str, paid_key: str, n: int) -> None:
    limits = httpx.Limits(max_connections=100)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        body = {"model": MODEL, "messages": [{"role": "user", "content": "benchmark"}], "max_tokens": 16}
        free = {"Authorization": f"Bearer {free_key}"}
        await client.post("/v1/chat/completions", json=body, headers=free)  # warm up, use the one request
        burst = await asyncio.gather(*(timed(client, "POST", "/v1/chat/completions", json=body, headers=free)
                                       for _ in range(n)))
        rejected = [t for status, t in burst if status == 429]
        trivial = await asyncio.gather(*(timed(client, "GET", "/login/") for _ in range(n)))
        ok = [t for status, t in trivial if status == 200]
        p429, p200 = statistics.median(rejected) * 1000, statistics.median(ok) * 1000
        failed = sum(1 for status, _ in burst if status == 0)
        print(f"429 under burst: {len(rejected)}/{n} refused ({failed} transport errors), "
              f"p50 {p429:.1f} ms; trivial 200 p50 "
              f"{p200:.1f} ms; ratio 429/200 = {p429 / p200:.2f}")

        paid = {"Authorization": f"Bearer {paid_key}"}
        started = time.perf_counter()
        results = await asyncio.gather(*(timed(client, "POST", "/v1/chat/completions", json=body,
                                               headers=paid) for _ in range(n)))
        elapsed = time.perf_counter() - started
        done = sum(1 for status, _ in results if status == 200)
        limit = ENGINE["max_inputs"] / ENGINE["call_s"]
        print(f"end-to-end: {done}/{n} ok in {elapsed:.2f} s = {done / elapsed:.0f} req/s; engine limit "
              f"{limit:.0f} req/s; ratio {done / elapsed / limit:.2f}; p50 latency "
              f"{statistics.median(t for _, t in results) * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--admissions", type=int, default=3000)
    args = parser.parse_args()

    p50, p99 = asyncio.run(bench_admission(args.admissions))
    print(f"admission decision (Lua, {args.admissions} calls): p50 {p50:.3f} ms, p99 {p99:.3f} ms")

    run = uuid.uuid4().hex[:8]  # fresh users each run (the database persists)
    free_key = ApiKeyFactory.create_with_raw(user=UserFactory(username=f"bench-free-{run}"), tier="free")[1]
    paid_key = ApiKeyFactory.create_with_raw(user=UserFactory(username=f"bench-paid-{run}"), tier="paid")[1]
    env = dict(os.environ, HEARTBEAT_INTERVAL_S="0.5", LOG_LEVEL="WARNING", RATE_LIMIT_FREE_RPM="1",
               RATE_LIMIT_PAID_RPM="1000000", RATE_LIMIT_PAID_TPM="100000000",
               CAPACITY_NOMINAL_TOKENS_PER_S="1000000")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", f"gpu.{MODEL}", "-P", "threads",
         "-c", "100", "--prefetch-multiplier", "1", "-l", "warning", "-n", "bench-gw@%h"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not live_workers(MODEL):
            time.sleep(0.2)
        port = free_port()
        uvicorn = ["-m", "uvicorn", "config.asgi:application", "--port", str(port), "--lifespan", "off",
                   "--log-level", "warning"]
        with running_server(uvicorn, env, port) as server:
            asyncio.run(bench_http(server.base, free_key, paid_key, args.requests))
    finally:
        worker.terminate()
        worker.wait(15)


if __name__ == "__main__":
    main()
