"""The environment of a production stack on the test run's services."""

import os
import secrets
import subprocess
import sys
from pathlib import Path

from tests.chat import live
from tests.livesubprocess import ROOT


def production_env(var_dir: Path, **extra: str) -> dict:
    """What an operator exports (docs/operations.md), on the test database and
    the services of this run; ``extra`` changes or, as "", removes a variable."""
    env = {**os.environ, "DATABASE_URL": live.test_database_url(), "PROMPTYARD_VAR_DIR": str(var_dir),
           "SECRET_KEY": secrets.token_urlsafe(50), "METRICS_TOKEN": secrets.token_urlsafe(32),
           "TRUSTED_PROXIES": "127.0.0.1", **extra}
    return {k: v for k, v in env.items() if v != ""}


def manage(env: dict, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def statuses(doctor_output: str) -> dict[str, str]:
    """`manage.py doctor`'s lines as part -> ok / warn / fail."""
    parts = {}
    for line in doctor_output.splitlines():
        status, rest = line.split(None, 1)
        parts[rest.split(":", 1)[0]] = status
    return parts
