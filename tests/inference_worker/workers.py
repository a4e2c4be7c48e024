"""Start real Celery GPU workers as subprocesses for tests."""

import json
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def worker_env(models: dict) -> dict:
    return dict(os.environ, INFERENCE_MODELS=json.dumps(models), HEARTBEAT_INTERVAL_S="0.5",
                HEARTBEAT_TTL_S="2")


@contextmanager
def celery_worker(models: dict, queues: list[str], *, concurrency: int | None = 64, name: str = "w1",
                  stdout=subprocess.DEVNULL, stop_signal=signal.SIGTERM):
    """A real worker process (threads pool, prefetch 1) consuming `queues`; its log
    goes to ``stdout``: pass a file to read it (an unread pipe would block the
    worker once its log outgrew the pipe's buffer). ``concurrency`` None: no pool
    flags at all (the worker sizes itself, config/celery.py)."""
    flags = [] if concurrency is None else ["-P", "threads", "-c", str(concurrency),
                                            "--prefetch-multiplier", "1"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", ",".join(queues), *flags,
         "-n", f"{name}@%h",
         "-l", "info", "--without-mingle", "--without-gossip", "--without-heartbeat"],
        cwd=ROOT, env=worker_env(models), stdout=stdout, stderr=subprocess.STDOUT, text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(stop_signal)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def delete_queues(names: list[str]) -> None:
    from config.celery import app

    with app.connection_for_write() as conn:
        channel = conn.channel()
        for name in names:
            channel.queue_delete(name)
