"""Swarm hosts as separate processes (real libtorrent sessions on 127.0.0.1):
``manage.py model_fetch --json`` with its own cache directory and caps."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def host_env(*, origin: str, redis_url: str | None, rate: int = 0, **extra: str) -> dict:
    """The environment of a host: S3 through the origin proxy, peers on loopback,
    fast heartbeats and peer refresh, every link capped at ``rate`` bytes/s."""
    env = dict(os.environ, S3_ENDPOINT_URL=origin, SWARM_LISTEN="127.0.0.1:0",
               SWARM_ADVERTISE_HOST="127.0.0.1", HEARTBEAT_INTERVAL_S="0.5", HEARTBEAT_TTL_S="3",
               SWARM_PEERS_REFRESH_S="0.5", SWARM_UPLOAD_RATE_LIMIT=str(rate),
               SWARM_DOWNLOAD_RATE_LIMIT=str(rate), PYTHONUNBUFFERED="1")
    env.pop("REDIS_URL", None)
    if redis_url:
        env["REDIS_URL"] = redis_url
    env.update(extra)
    return env


class Host:
    def __init__(self, name: str, args: list[str], env: dict, cache: Path):
        self.name, self.cache = name, cache
        self.log = tempfile.NamedTemporaryFile("w+", prefix=f"host-{name}-", suffix=".log", delete=False)
        self.proc = subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT, text=True)

    def output(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text()

    def events(self, kind: str | None = None) -> list[dict]:
        out = []
        for line in self.output().splitlines():
            if line.startswith("{"):
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if kind is None or event.get("event") == kind:
                    out.append(event)
        return out

    def wait_for(self, predicate, *, timeout: float, what: str):
        """Poll this host's events until predicate(events) is truthy."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate(self.events())
            if value:
                return value
            if self.proc.poll() is not None:
                value = predicate(self.events())
                if value:
                    return value
                raise AssertionError(f"host {self.name} exited ({self.proc.returncode}) before {what}:\n"
                                     f"{self.output()[-3000:]}")
            time.sleep(0.1)
        raise TimeoutError(f"host {self.name}: no {what} within {timeout}s:\n{self.output()[-3000:]}")

    def wait_present(self, timeout: float = 60) -> dict:
        return self.wait_for(lambda events: next((e for e in events if e["event"] == "present"), None),
                             timeout=timeout, what="present event")

    def progress(self) -> dict | None:
        events = self.events("progress")
        return events[-1] if events else None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def terminate(self) -> None:
        """Ask it to stop (SIGTERM); stop() or close() waits for it."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout: float = 15) -> int:
        if self.proc.poll() is None:
            self.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def close(self) -> None:
        self.stop()
        self.log.close()
        os.unlink(self.log.name)


def fetch_host(name: str, *, model: str, version: str, cache: Path, env: dict, seed: bool = True,
               extra_args: tuple[str, ...] = ()) -> Host:
    args = ["manage.py", "model_fetch", "--model", model, "--version", version, "--cache", str(cache),
            "--json", *(["--seed"] if seed else []), *extra_args]
    return Host(name, args, env, cache)
