"""Where the gateway's overhead at one connection goes (run by hand; prints, asserts nothing).

    .venv/bin/python bench/overhead.py [--requests 300] [--call-ms 200]
        [--variant VAR=value,...] [--worker-variant VAR=value,...] [--checkout PATH]

Same services and stack as bench/e2e.py (one `serve` process, one Celery worker on
the fixed-cost engine). One client on one kept-alive connection sends requests one
after another and reads each answer's Server-Timing header (inference_client/
completion.py), so every phase is measured per request in the same run:

- authenticate, parse, resolve, cache, admit: the gateway's stages before the
  generation is published (inference_client/stages);
- stream: from the publish's start to the terminal event reaching the gateway, of
  which worker is the worker's own time (scheduler queue + engine call); the rest
  is the publish (also shown alone) and transport: broker -> task -> scheduler,
  and event log -> gateway;
- total: the view, start to response object; the client's round trip minus total
  is HTTP, uvicorn and Django's handler around the view.

The overhead is the round trip minus the engine's call.

This VM's latency drifts (the same code measured 7 ms and 15 ms an hour apart),
so compare variants only within one run: ``--variant`` adds a second serve
process with other environment variables on the same worker, ``--worker-variant``
a second worker (on a model of its own, behind the same serve process); requests
alternate between them and the baseline. ``--checkout PATH`` (another git worktree)
runs the variant's processes on that checkout's code, so that a change is
measured against main in one run (``--variant`` or ``--worker-variant`` then
choose which process runs it; they may be empty: ``--worker-variant ''``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e  # noqa: E402  (sets up Django and the bench's model)

# The phases' names before they were the stages' (a --checkout of older code sends these).
OLD_NAMES = {"auth": "authenticate", "wait": "stream"}


def timings(header: str) -> dict[str, float]:
    return {OLD_NAMES.get(m.group(1), m.group(1)): float(m.group(2))
            for m in re.finditer(r"([\w-]+);dur=([\d.]+)", header)}


class Client:
    """One kept-alive connection to a serve process's port."""

    def __init__(self, port: int):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def up(self) -> bool:
        try:
            return e2e.httpx.get(f"http://127.0.0.1:{self.port}/login/", timeout=1).status_code == 200
        except e2e.httpx.TransportError:
            return False

    def call(self, body: str, headers: dict) -> dict[str, float]:
        started = time.perf_counter()
        self.conn.request("POST", "/v1/chat/completions", body, headers)
        response = self.conn.getresponse()
        response.read()
        rtt = (time.perf_counter() - started) * 1000
        if response.status != 200:
            raise RuntimeError(f"{response.status} from port {self.port}")
        return {**timings(response.getheader("Server-Timing", "")), "client": rtt}


# Older code measured no resolve or cache stage: 0 there.
BEFORE_PUBLISH = ["authenticate", "parse", "resolve", "cache", "admit"]


def report(name: str, rows: list[dict], call_ms: float) -> dict[str, float]:
    phases = {name: [r.get(name, 0.0) for r in rows] for name in
              [*BEFORE_PUBLISH, "publish", "stream", "worker", "total", "client"]}
    phases.update({
        "gateway before publishing (authenticate..admit)": [sum(r.get(name, 0.0) for name in BEFORE_PUBLISH)
                                                            for r in rows],
        "publish + transport (stream - worker)": [r["stream"] - r["worker"] for r in rows],
        "worker beyond the call (worker - call)": [r["worker"] - call_ms for r in rows],
        "HTTP + handler (client - total)": [r["client"] - r["total"] for r in rows],
        "OVERHEAD (client - call)": [r["client"] - call_ms for r in rows],
    })
    print(f"\n-- {name}: {len(rows)} requests")
    print(f"{'phase (ms)':<52} {'p50':>8} {'p90':>8} {'p99':>8}")
    for phase, values in phases.items():
        print(f"{phase:<52} {statistics.median(values):>8.2f} {e2e.pct(values, 0.9):>8.2f} "
              f"{e2e.pct(values, 0.99):>8.2f}")
    return {phase: statistics.median(values) for phase, values in phases.items()}


# The model the worker variant serves: its own queue, the same engine.
VARIANT_MODEL = f"{e2e.MODEL}-variant"


def run(requests: int, call_ms: float, variant: dict[str, str] | None, worker_variant: dict[str, str] | None,
        checkout: Path = e2e.ROOT) -> None:
    engine = {**e2e.ENGINE, "call_s": call_ms / 1000}
    models = {e2e.MODEL: engine, **({VARIANT_MODEL: engine} if worker_variant is not None else {})}
    env = dict(os.environ, **e2e.STACK_ENV, INFERENCE_MODELS=json.dumps(models))
    key = e2e.make_keys("paid", 1)[0]
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    with e2e.Stack(1, 1, env) as stack:
        # name -> (a connection of its own, the body it sends: the model it asks for)
        servers = {"baseline": (Client(stack.port), _body(e2e.MODEL))}
        code = "" if checkout == e2e.ROOT else f" (code of {checkout})"
        if variant is not None:
            # A second serve process with the variant's environment, on the same worker.
            port = e2e.free_port()
            stack.spawn(f"serve-{port}", ["manage.py", "serve", "--no-demo", "--port", str(port),
                                          "--workers", "1"], {**env, **variant}, checkout)
            servers["variant " + _named(variant) + code] = (Client(port), _body(e2e.MODEL))
        if worker_variant is not None:
            # A second worker with the variant's environment, serving a model of its own
            # behind the same serve process.
            stack.spawn_worker("worker-variant", VARIANT_MODEL, {**env, **worker_variant}, checkout)
            servers["worker variant " + _named(worker_variant) + code] = (Client(stack.port),
                                                                           _body(VARIANT_MODEL))
        deadline = time.monotonic() + 60
        while not all(client.up() for client, _ in servers.values()) or \
                (worker_variant is not None and not e2e.live_workers(VARIANT_MODEL)):
            if time.monotonic() > deadline:
                raise TimeoutError("the variant did not start")
            time.sleep(0.2)
        rows: dict[str, list] = {name: [] for name in servers}
        for i in range(requests + 20):  # alternating, one request in flight at a time
            for name, (client, body) in servers.items():
                row = client.call(body, headers)
                if i >= 20:  # the first ones warm pools and connections
                    rows[name].append(row)
    load = os.getloadavg()
    print(f"\n{requests} sequential requests per variant, one connection each, alternating; "
          f"{call_ms:.0f} ms call; load average {load[0]:.2f} {load[1]:.2f}")
    medians = {name: report(name, r, call_ms) for name, r in rows.items()}
    base = medians.pop("baseline")
    for name, var in medians.items():
        print(f"\n{name} / baseline, p50:")
        for phase in ("gateway before publishing (authenticate..admit)", "publish",
                      "publish + transport (stream - worker)",
                      "worker beyond the call (worker - call)", "HTTP + handler (client - total)",
                      "OVERHEAD (client - call)"):
            print(f"  {phase:<50} {var[phase]:>7.2f} / {base[phase]:>7.2f} ms")


def _body(model: str) -> str:
    return json.dumps({**e2e.BODY, "model": model})


def _named(env: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in env.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--call-ms", type=float, default=200.0)
    parser.add_argument("--variant", default=None, help="VAR=value,...: a second serve process with "
                        "these environment variables, measured against the first in the same run")
    parser.add_argument("--worker-variant", default=None, help="VAR=value,...: a second worker with "
                        "these environment variables (on a model of its own), measured the same way")
    parser.add_argument("--checkout", type=Path, default=e2e.ROOT, help="a git worktree whose code "
                        "the variant's processes run (the baseline runs this checkout's)")
    args = parser.parse_args()
    if args.checkout.resolve() != e2e.ROOT and args.variant is None and args.worker_variant is None:
        parser.error("--checkout needs --variant or --worker-variant (possibly empty) to say which process")
    run(args.requests, args.call_ms, _env(args.variant), _env(args.worker_variant), args.checkout.resolve())


def _env(pairs: str | None) -> dict[str, str] | None:
    return None if pairs is None else dict(kv.split("=", 1) for kv in pairs.split(",") if kv)


if __name__ == "__main__":
    main()
