"""Open-loop latency of the whole /v1 path (run by hand; prints ratios, asserts nothing).

    .venv/bin/python bench/openloop.py [--duration 20] [--loads 0.5,0.8,0.95] [--configs 1x1,1x2]
        [--poisson] [--worker-flags '-c 100'] [--max-inputs 50]

A closed loop (wrk, bench/e2e.py) sends the next request only when an answer
comes back, so at 200 connections on a 250 req/s device Little's law fixes the
mean latency at 0.8 s whatever the server does. Here requests arrive at a fixed
rate, a share of the device limit, whether or not earlier ones are answered
(as wrk2 -R does), and each latency counts from the moment its request was due,
not from when the client got round to sending it (no coordinated omission).

Same stack as bench/e2e.py: SxD = S `serve` processes, D fixed-cost devices of
50 inputs / 200 ms per call (D x 250 req/s is the limit). Per load it prints the
achieved rate, p50 / p90 / p99 / max latency over the call time, non-200
answers, how late the client sent (its own lag: when it is large, the client was
the limit), and CPU milliseconds per request of each process; under the row, the
non-200 answers by status and ``error.code`` (status 0: no answer, by exception)
and when in the step they were due (the warm-up's too, if it had any).

Needs what bench/e2e.py needs: DATABASE_URL (migrated: the key is made before
`serve` starts), REDIS_URL, CELERY_BROKER_URL=amqp://..., as scripts/test.sh sets them.

A fixed-cost device cannot take a request into a call already running: one
that arrives just after a call began waits for it to end, then runs a whole
call. Hence a floor near 2x the call time for the unluckiest arrivals at any
load, and the p99 at a load close to 1 adds the wait for a batch with room.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e  # noqa: E402  (sets up Django and the model catalog)
import psutil  # noqa: E402

# uvicorn's timeout_keep_alive (manage.py serve keeps its default): it closes a connection idle this long.
KEEP_ALIVE_S = 5.0


class _Connections:
    """Kept-alive HTTP/1.1 connections, as many as requests in flight: httpx's pool
    costs the client more CPU per request than the server spends (an open loop at
    200 req/s fell seconds behind), so requests are written and read by hand."""

    def __init__(self, host: str, port: int, request: bytes):
        self.host, self.port, self.request = host, port, request
        # (reader, writer, when it went idle), the most recent last
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []
        self.opened: list[asyncio.StreamWriter] = []
        self.start = 0.0  # when the first request was due
        self.error_times: dict[str, list[float]] = {}  # "status code" -> when each was due, from start

    async def post(self) -> tuple[int, bytes]:
        """(status, body): the body of a non-200 answer only (a 200's is read and dropped)."""
        reader, writer = self._idle() or await self._open()
        writer.write(self.request)
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        lengths = [int(line.split(b":", 1)[1]) for line in head.lower().split(b"\r\n")
                   if line.startswith(b"content-length:")]
        body = b""
        if lengths:
            body = await reader.readexactly(lengths[0])
        else:  # chunked
            while size := int((await reader.readline()).strip(), 16):
                body += (await reader.readexactly(size + 2))[:-2]
            await reader.readline()
        self.idle.append((reader, writer, time.monotonic()))
        return status, b"" if status == 200 else body

    def _idle(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """The connection idle the least time, if the server will still read it: uvicorn
        closes one idle KEEP_ALIVE_S, and a request written on it reads an EOF (a
        status 0 here, not the server's answer), so one the server closed, or that is
        within a second of it, is dropped, as httpx's pool does."""
        while self.idle:
            reader, writer, since = self.idle.pop()  # those under it idled longer
            if not reader.at_eof() and time.monotonic() - since < KEEP_ALIVE_S - 1:
                return reader, writer
            writer.close()
        return None

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        self.opened.append(writer)
        return reader, writer

    def close(self) -> None:
        for writer in self.opened:
            writer.close()


def _error_code(body: bytes) -> str:
    """A non-200 answer's ``error.code`` (its JSON body), or what the body was instead."""
    try:
        return str(json.loads(body)["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return "no JSON error code: " + body[:60].decode(errors="replace")


async def _one(connections: _Connections, due: float, latencies: list[float], lags: list[float],
               statuses: dict[int, int], errors: dict[str, int]) -> None:
    lags.append(time.monotonic() - due)
    try:
        status, body = await connections.post()
        code = "" if status == 200 else _error_code(body)
    except (OSError, ValueError, asyncio.IncompleteReadError) as exc:
        status, code = 0, type(exc).__name__
    statuses[status] = statuses.get(status, 0) + 1
    if status == 200:
        latencies.append(time.monotonic() - due)
    else:  # when in the step (seconds from its start) too: a warm-up shows at its start
        key = f"{status} {code}"
        errors[key] = errors.get(key, 0) + 1
        connections.error_times.setdefault(key, []).append(due - connections.start)


async def _arrivals(base: str, key: str, rate: float, duration: float, poisson: bool) -> dict:
    """Requests due at a fixed rate (or Poisson arrivals of that mean) for ``duration``."""
    latencies: list[float] = []
    lags: list[float] = []
    statuses: dict[int, int] = {}
    errors: dict[str, int] = {}
    url = urlsplit(base)
    body = json.dumps(e2e.BODY).encode()
    request = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {url.netloc}\r\nAuthorization: Bearer {key}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    connections = _Connections(url.hostname, url.port, request)
    tasks = []
    start = connections.start = time.monotonic() + 0.05
    due = start
    while due < start + duration:
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(_one(connections, due, latencies, lags, statuses, errors)))
        due += random.expovariate(rate) if poisson else 1 / rate
    await asyncio.gather(*tasks)
    connections.close()
    return {"latencies": sorted(latencies), "lags": sorted(lags), "statuses": statuses, "errors": errors,
            "error_times": connections.error_times, "sent": len(tasks), "duration": duration}


def _errors_line(result: dict) -> str:
    """Non-200 answers by status and error code, each with when in the step they were due."""
    parts = []
    for key, count in sorted(result["errors"].items(), key=lambda kv: -kv[1]):
        times = result["error_times"][key]
        parts.append(f"{count} x {key} (due {min(times):.2f}-{max(times):.2f} s into the step)")
    return "        non-200: " + "; ".join(parts)


def _line(load: float, result: dict, cpu: dict[str, float]) -> str:
    lat, ok = result["latencies"], max(1, result["statuses"].get(200, 0))
    ratio = [e2e.pct(lat, q) / e2e.CALL_S for q in (0.5, 0.9, 0.99)] + [lat[-1] / e2e.CALL_S if lat else 0]
    non200 = sum(c for s, c in result["statuses"].items() if s != 200)
    lag99 = e2e.pct(result["lags"], 0.99) * 1000
    per = "  ".join(f"{name} {1000 * secs / ok:.2f}" for name, secs in cpu.items())
    return (f"  {load:4.2f}  {result['sent'] / result['duration']:7.1f}  "
            + "  ".join(f"{r:5.2f}" for r in ratio) + f"  {non200:7d}  {lag99:9.1f}   {per}")


def run(serve: int, devices: int, loads: list[float], duration: float, poisson: bool) -> None:
    limit = devices * e2e.MAX_INPUTS / e2e.CALL_S
    env = dict(os.environ, **e2e.STACK_ENV, INFERENCE_MODELS=json.dumps({e2e.MODEL: e2e.ENGINE}))
    key = e2e.make_keys("paid", 1)[0]
    with e2e.Stack(serve, devices, env) as stack:
        warm = asyncio.run(_arrivals(stack.base, key, 0.5 * limit, 3, poisson))  # warm up
        e2e.settle()
        print(f"\n== {serve} serve process(es), {devices} device(s): limit {limit:.0f} req/s "
              f"({'Poisson' if poisson else 'constant'} arrivals, {duration:.0f} s per load)")
        if warm["errors"]:
            print("  warm-up (3 s at 0.5):\n" + _errors_line(warm))
        print("  load  req/s    p50   p90   p99   max  (x call)  non-200  lag p99 ms   CPU ms per request")
        client = psutil.Process()
        for load in loads:
            groups = {**stack.groups(), "client": [client]}
            before = {name: e2e.cpu_seconds(procs) for name, procs in groups.items()}
            result = asyncio.run(_arrivals(stack.base, key, load * limit, duration, poisson))
            cpu = {name: e2e.cpu_seconds(procs) - before[name] for name, procs in groups.items()}
            print(_line(load, result, cpu), flush=True)
            if result["errors"]:
                print(_errors_line(result), flush=True)
            e2e.settle()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--loads", default="0.5,0.8,0.95")
    parser.add_argument("--configs", default="1x1,1x2")
    parser.add_argument("--poisson", action="store_true", help="Poisson arrivals instead of a fixed rate")
    parser.add_argument("--worker-flags", default="",
                        help="each worker's Celery pool flags, e.g. '-c 100' (default: it sizes itself)")
    parser.add_argument("--max-inputs", type=int, default=e2e.MAX_INPUTS,
                        help="the device's inputs per call: fewer, the same call time, a lower limit "
                             "(the same loads for less CPU)")
    args = parser.parse_args()
    e2e.WORKER_FLAGS[:] = args.worker_flags.split()
    e2e.MAX_INPUTS = args.max_inputs
    e2e.ENGINE["max_inputs"] = args.max_inputs
    print(f"open loop on this machine ({psutil.cpu_count()} cores, shared by the client and the whole stack)")
    for config in args.configs.split(","):
        serve, devices = (int(n) for n in config.split("x"))
        run(serve, devices, [float(x) for x in args.loads.split(",")], args.duration, args.poisson)


if __name__ == "__main__":
    main()
