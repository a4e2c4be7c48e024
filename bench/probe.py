"""A probe beside a load generator: interactive requests of its own, each split by
its answer's Server-Timing and the worker's stored result into where it waited
(bench/batch.py --live)."""

from __future__ import annotations

import threading
import time

from bench.e2e import pct

PROBES = 4


class Probe:
    """PROBES interactive requests at a time beside wrk, split from its answer's
    Server-Timing and the worker's stored result: transport (publish to the
    worker's scheduler and the answer back, broker and prefetch window included),
    the scheduler's queue (submit to the first call), the call itself, and the
    rest of the client's wait: the gateway's own work and the HTTP exchange."""

    def __init__(self, base: str, key: str, model: str):
        import httpx

        from inference_protocol.events import RedisEventLog

        self.client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60)
        self.log, self.model = RedisEventLog(), model
        self.stop = threading.Event()
        self.parts: list[tuple[float, float, float, float]] = []
        self.refused: list = []

    def _one(self) -> None:
        body = {"model": self.model, "max_tokens": 16, "messages": [{"role": "user", "content": "probe"}]}
        started = time.monotonic()
        r = self.client.post("/v1/chat/completions", json=body)
        total_ms = (time.monotonic() - started) * 1000
        if r.status_code != 200:  # counted with wrk's non-200 answers
            error = r.json().get("error", {})
            self.refused.append(f"{error.get('code', r.status_code)} ({error.get('reason', '')})")
            return
        header = r.headers.get("server-timing", "")
        timing = dict(p.split(";dur=") for p in header.split(", ") if ";dur=" in p)
        result = (self.log.final(r.json()["id"].split("-", 1)[1]) or {}).get("result") or {}
        if r.status_code == 200 and "worker" in timing and "queued_s" in result:
            worker_ms, stream_ms = float(timing["worker"]), float(timing["stream"])
            self.parts.append((stream_ms - worker_ms, 1000 * result["queued_s"],
                               worker_ms - 1000 * result["queued_s"], total_ms - stream_ms))

    def __enter__(self) -> Probe:
        self.started = time.monotonic()

        def loop():
            while not self.stop.is_set():
                self._one()
        self.threads = [threading.Thread(target=loop, daemon=True) for _ in range(PROBES)]
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join()
        self.rps = len(self.parts) / (time.monotonic() - self.started)

    def row(self) -> list[str]:
        """p50 / p99 (ms) of transport, queue, call and the rest."""
        cols = list(zip(*self.parts, strict=True)) or [[0.0]] * 4
        return [f"{pct(c, 0.5):.0f} / {pct(c, 0.99):.0f}" for c in cols]
