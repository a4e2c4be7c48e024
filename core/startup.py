"""Checks every serving process makes before it starts (server, worker, `serve`)."""

from __future__ import annotations

import gc
import os
import secrets
import sys
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.dispatch import Signal

from core.env import env_int

# Sent by `manage.py serve` in the process that serves, just before it serves (not
# by every import of the ASGI app): apps start their background work on it. A
# receiver returns what it started (with a stop()), so a test can end it.
serving = Signal()

MISSING_SECRET_KEY = (
    "SECRET_KEY is not set. Export SECRET_KEY (e.g. "
    "SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')); "
    "only the embedded default that scripts/run.sh starts runs without one."
)


def settings_or_exit() -> None:
    """Load the settings now (manage.py, the Celery app): a variable that is malformed
    is one line naming it on stderr and exit status 2, not a traceback."""
    from django.conf import settings

    try:
        settings.INSTALLED_APPS  # noqa: B018 - the access loads every settings module
    except ImproperlyConfigured as exc:
        sys.stderr.write(f"promptyard: {exc}\n")
        raise SystemExit(2) from None


def embedded_secret_key(path: Path) -> str:
    """The embedded default's own random key, made once and kept in `path` (0600)."""
    try:
        key = path.read_text().strip()
        if key:
            return key
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written aside, then linked into place: two processes starting at once agree
    # on one key, and nobody reads a half-written file.
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_urlsafe(50))
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return path.read_text().strip()


def check_secret_key() -> None:
    """Refuse to start without SECRET_KEY (no fallback key outside the embedded default)."""
    from django.conf import settings

    try:
        key = settings.SECRET_KEY  # Django itself refuses an empty one on access
    except ImproperlyConfigured:
        key = ""
    if not key:
        raise ImproperlyConfigured(MISSING_SECRET_KEY)


def tune_gc() -> None:
    """For a serving process once its app is built, and a GPU worker once its
    models are loaded: what start-up made (Django, the apps, URL conf: about
    150,000 objects; Celery and the engines in a worker) leaves the collector's
    reach, and the youngest generation is collected every GC_GEN0_THRESHOLD
    allocations (Python's 700 collected it ~20 times a second under chat load,
    and a full collection of the whole heap paused the event loop 80-130 ms, a
    chat message's p99, and a worker's scheduler and event writer ~150 ms, a
    /v1 request's p99: bench/chat.py, bench/overhead.py, with gc.callbacks timings)."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(env_int("GC_GEN0_THRESHOLD", 10_000), older, oldest)
