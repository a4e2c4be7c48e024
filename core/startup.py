"""Checks every serving process makes before it starts (server, worker, `serve`)."""

from __future__ import annotations

import gc
import logging
import os
import secrets
import sys
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import CommandError
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


class StartupError(CommandError):
    """A process cannot start: one line naming what is wrong and how to make it right
    (a management command prints it as such, without a traceback)."""


def check_port(host: str, port: int) -> None:
    """Refuse a port another process listens on (before anything else starts)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise StartupError(f"cannot listen on {host}:{port} ({exc.strerror}): stop what uses the port "
                               "or pass another --port") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{exc.__class__.__name__}: {text.splitlines()[0]}" if text else exc.__class__.__name__


def check_broker() -> None:
    """One connection to the broker, bounded in time (no retries for ever at start)."""
    from django.conf import settings
    from kombu import Connection

    if not settings.CELERY_BROKER_URL:
        return
    try:
        with Connection(settings.CELERY_BROKER_URL, connect_timeout=3) as conn:
            conn.ensure_connection(max_retries=1, timeout=3)
    except Exception as exc:  # whatever the transport raises: the operator needs the line
        raise StartupError(f"the broker is unreachable ({_first_line(exc)}): check CELERY_BROKER_URL "
                           "and that the broker runs there") from None


def check_services() -> None:
    """The database, the broker and the object store answer (a server's start)."""
    from django.conf import settings
    from django.db import connection

    from core.blobstore import get_blob_store

    pool_log = logging.getLogger("psycopg.pool")
    level, pool_log.level = pool_log.level, logging.CRITICAL  # its retries, a line each: ours says it
    try:
        connection.ensure_connection()
    except Exception as exc:  # OperationalError, or a pool that timed out
        raise StartupError(f"the database is unreachable ({_first_line(exc)}): check DATABASE_URL "
                           "and that PostgreSQL runs there") from None
    finally:
        pool_log.setLevel(level)
    check_broker()
    if settings.S3_BUCKET:
        store = get_blob_store()
        try:
            store.ensure_bucket()  # made if missing, as on a fresh installation
        except Exception as exc:  # botocore's connection and client errors
            raise StartupError(f"the object store {store.describe()} is unreachable ({_first_line(exc)}): "
                               "check S3_ENDPOINT_URL, S3_BUCKET and the S3 keys") from None


def check_worker() -> None:
    """What a Celery worker or beat needs before it connects: a broker it can reach,
    and Redis (events, heartbeats)."""
    from django.conf import settings

    if not settings.CELERY_BROKER_URL:
        raise StartupError("CELERY_BROKER_URL is not set: e.g. export "
                           "CELERY_BROKER_URL=amqp://guest:guest@127.0.0.1:5672//")
    if not settings.REDIS_URL:
        raise StartupError("REDIS_URL is not set: workers write events and heartbeats there; e.g. "
                           "export REDIS_URL=redis://127.0.0.1:6379/0")
    check_broker()
