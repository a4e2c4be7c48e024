"""Start the app as a separate process on a free port (as a user would run it)."""

import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
SERVICE_VARS = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND",
                "S3_ENDPOINT_URL", "S3_BUCKET", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "DEBUG",
                "SECRET_KEY")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def embedded_env(var_dir: Path, **extra: str) -> dict:
    """The environment of a fresh machine: no service variables at all."""
    env = {k: v for k, v in os.environ.items() if k not in SERVICE_VARS}
    env.update(PROMPTYARD_VAR_DIR=str(var_dir), **extra)
    return env


@contextmanager
def running_server(args: list[str], env: dict, port: int, timeout: float = 60):
    proc = subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited early:\n{proc.stdout.read()}")
            try:
                httpx.get(base + "/login/", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"server did not start within {timeout}s") from None
                time.sleep(0.2)
        yield base, proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
