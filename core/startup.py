"""Checks every serving process makes before it starts (server, worker, `serve`)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.dispatch import Signal

# Sent by `manage.py serve` in the process that serves, just before it serves (not
# by every import of the ASGI app): apps start their background work on it. A
# receiver returns what it started (with a stop()), so a test can end it.
serving = Signal()

MISSING_SECRET_KEY = (
    "SECRET_KEY is not set. Export SECRET_KEY (e.g. "
    "SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')); "
    "only the embedded default that scripts/run.sh starts runs without one."
)


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
