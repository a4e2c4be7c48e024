"""Start the app as a separate process on a free port (as a user would run it)."""

import os
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx

ROOT = Path(__file__).resolve().parent.parent
SERVICE_VARS = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND",
                "S3_ENDPOINT_URL", "S3_BUCKET", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "DEBUG",
                "SECRET_KEY", "PROMPTYARD_EMBEDDED")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def embedded_env(var_dir: Path, **extra: str) -> dict:
    """What scripts/run.sh runs on a fresh machine: no service variables at all."""
    env = {k: v for k, v in os.environ.items() if k not in SERVICE_VARS}
    env.update(PROMPTYARD_VAR_DIR=str(var_dir), PROMPTYARD_EMBEDDED="1", **extra)
    return env


@dataclass
class Server:
    base: str
    proc: subprocess.Popen
    log: IO[str]

    def output(self) -> str:
        """Everything the server printed so far."""
        self.log.flush()
        self.log.seek(0)
        return self.log.read()


@contextmanager
def running_server(args: list[str], env: dict, port: int, timeout: float = 120, *,
                   program: tuple[str, ...] = (sys.executable,), ready_path: str = "/login/",
                   cwd: Path = ROOT):
    """``program`` with ``args`` in ``cwd``, until ``ready_path`` answers on ``port`` (any status)."""
    # Output goes to a file, not a pipe: nothing drains a pipe while a test runs,
    # and a server whose 64 KiB pipe buffer fills blocks on its next log line.
    # The deadline is generous: loading SmolLM2 on a loaded 2-core machine took
    # over 60 s once (a passing start returns as soon as the server answers).
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen([*program, *args], cwd=cwd, env={**env, "PYTHONUNBUFFERED": "1"},
                                stdout=log, stderr=subprocess.STDOUT, text=True)
        server = Server(f"http://127.0.0.1:{port}", proc, log)
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"server exited early:\n{server.output()}")
                try:
                    httpx.get(server.base + ready_path, timeout=1)
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"server did not start within {timeout}s") from None
                    time.sleep(0.2)
            yield server
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
