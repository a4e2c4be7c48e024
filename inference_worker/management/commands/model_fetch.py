"""manage.py model_fetch --model NAME --version V [--cache DIR] [--seed] [--json]

Joins the version's swarm (peers from the workers' heartbeats, the object store as
web seed), downloads into the cache, verifies every file's SHA-256 against the
manifest, and only then reports the version present. Interrupted, it keeps what it
has: the next run resumes. A progress bar shows bytes, rate, peers and ETA;
--json prints one JSON object a second instead (and a last one with the outcome).
--seed keeps serving the verified copy to peers until interrupted.
"""

from __future__ import annotations

import json
import resource
import signal
import sys
import threading
import time

from django.core.management.base import CommandError
from tqdm import tqdm

from core import redis as core_redis
from core.commands import ModelVersionCommand
from inference_worker import checkpoints
from inference_worker.heartbeat import HeartbeatThread


def _peer(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--peer {value!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


class Command(ModelVersionCommand):
    help = "Fetch a model version through the swarm into the local cache, verified."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--cache", default=None, help="cache directory (default MODEL_CACHE_DIR)")
        parser.add_argument("--seed", action="store_true", help="keep seeding until interrupted")
        parser.add_argument("--json", action="store_true", dest="as_json", help="JSON lines, no progress bar")
        parser.add_argument("--no-web-seed", action="store_true", help="fetch from peers only")
        parser.add_argument("--peer", action="append", type=_peer, default=[], metavar="HOST:PORT",
                            help="a peer to connect to, besides those in the heartbeats")

    def handle(self, *args, model, model_version, cache, seed, as_json, no_web_seed, peer, **options):
        label = f"{model}@{model_version}"
        try:
            manager = checkpoints.start_manager(cache_dir=cache, web_seed=not no_web_seed, peers=peer)
        except checkpoints.FetchError as exc:
            if as_json:
                self.stdout.write(json.dumps({"event": "failed", "code": exc.code, "reason": str(exc)}))
            raise CommandError(f"{exc} [{exc.code}]") from None
        heartbeat = HeartbeatThread() if core_redis.enabled() else None
        if heartbeat:
            heartbeat.start()
        stopped = threading.Event()

        def on_signal(signum, frame):
            stopped.set()
            for fetch in list(manager.fetches.values()):
                fetch.stop()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        reporter = _Reporter(manager, label, as_json=as_json, out=self.stdout)
        reporter.start()
        started = time.monotonic()
        try:
            try:
                path = manager.ensure(model=model, version=model_version)
            except checkpoints.FetchError as exc:
                reporter.stop()
                reporter.emit({"event": "failed", "code": exc.code, "reason": str(exc)})
                raise CommandError(f"{exc} [{exc.code}]") from None
            reporter.stop()
            fetch = manager.fetches[label]
            reporter.emit({"event": "present", "path": str(path),
                           "seconds": round(time.monotonic() - started, 2), "listen": manager.address,
                           "peak_rss_mb": _peak_rss_mb(), **fetch.stats()})
            if not as_json:
                self.stdout.write(f"{label} is present and verified in {path}")
            while seed and not stopped.wait(1.0):
                pass
            if seed:
                reporter.emit({"event": "stopped", "peak_rss_mb": _peak_rss_mb(), **fetch.stats()})
        finally:
            if heartbeat:
                heartbeat.stop()
            manager.close()

class _Reporter(threading.Thread):
    """Shows the fetch's status: a tqdm bar (stderr) or JSON lines (stdout)."""

    def __init__(self, manager, label, *, as_json, out):
        super().__init__(name="progress", daemon=True)
        self.manager, self.label, self.as_json, self.out = manager, label, as_json, out
        self._stop_event = threading.Event()
        self._bar = None

    def emit(self, event: dict) -> None:
        if self.as_json:
            self.out.write(json.dumps(event))
            self.out.flush()

    def run(self):
        while not self._stop_event.wait(1.0 if self.as_json else 0.25):
            self._show()
        self._show()
        if self._bar is not None:
            self._bar.close()

    def stop(self):
        self._stop_event.set()
        self.join(5)

    def _show(self):
        fetch = self.manager.fetches.get(self.label)
        if fetch is None:
            return
        status = fetch.status
        if self.as_json:
            self.emit({"event": "progress", **status.record()})
            return
        if self._bar is None and status.total_bytes:
            self._bar = tqdm(total=status.total_bytes, unit="B", unit_scale=True, unit_divisor=1024,
                             desc=self.label, file=sys.stderr, dynamic_ncols=True)
        if self._bar is not None:
            self._bar.update(status.done_bytes - self._bar.n)
            self._bar.set_postfix_str(f"{status.state}, {status.peers} peers", refresh=True)


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
