"""The single-host production stack: what its settings must hold, and the
processes they call for (`manage.py procfile`, run by `scripts/run.sh --production`)."""

from __future__ import annotations

import ipaddress
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from inference_protocol import catalog

_TOKEN = "python3 -c 'import secrets; print(secrets.token_urlsafe({n}))'"


@dataclass(frozen=True)
class Problem:
    setting: str
    message: str  # what is wrong and how to make it right

    def __str__(self) -> str:
        return f"{self.setting}: {self.message}"


def _secret_key() -> Problem | None:
    try:
        key = settings.SECRET_KEY
    except ImproperlyConfigured:  # Django refuses to hand out an empty one
        key = ""
    make = f"export SECRET_KEY=$({_TOKEN.format(n=50)})"
    if not key:
        return Problem("SECRET_KEY", f"not set: {make}")
    # Django's own deploy check: a key anyone could guess signs sessions and links.
    if len(key) < 50 or len(set(key)) < 5 or key.startswith("django-insecure-"):
        return Problem("SECRET_KEY", f"too weak (at least 50 characters, 5 distinct): {make}")
    return None


def _url(name: str, value: str, schemes: tuple[str, ...], example: str) -> Problem | None:
    if not value:
        return Problem(name, f"not set: e.g. export {name}={example}")
    if value.split("://", 1)[0] not in schemes:
        return Problem(name, f"{value.split('://', 1)[0]!r} is not one of {', '.join(schemes)}: "
                             f"e.g. {name}={example}")
    return None


def _trusted_proxies() -> Problem | None:
    if not settings.TRUSTED_PROXIES:
        return Problem("TRUSTED_PROXIES", "not set: the addresses of the load balancers in front of "
                                          "the servers (e.g. 10.0.0.0/8), or 127.0.0.1 when clients "
                                          "connect directly")
    for proxy in settings.TRUSTED_PROXIES:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            return Problem("TRUSTED_PROXIES", f"{proxy!r} is not an address or network (e.g. 10.0.0.0/8)")
    return None


def problems() -> list[Problem]:
    """Every setting a production stack needs that is missing or malformed
    (malformed numbers, JSON and keys already stop the settings from loading)."""
    found = [
        _secret_key(),
        _url("REDIS_URL", settings.REDIS_URL, ("redis", "rediss", "unix"), "redis://127.0.0.1:6379/0"),
        _url("CELERY_BROKER_URL", settings.CELERY_BROKER_URL, ("amqp", "amqps", "pyamqp", "redis", "rediss"),
             "amqp://guest:guest@127.0.0.1:5672//"),
        _trusted_proxies(),
    ]
    if not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        found.append(Problem("DATABASE_URL", "not a PostgreSQL URL (SQLite is the embedded default's): "
                                             "e.g. export DATABASE_URL=postgres://promptyard@127.0.0.1:5432/promptyard"))
    if settings.DEBUG:
        found.append(Problem("DEBUG", "on: it shows tracebacks and settings to anyone; unset DEBUG"))
    if settings.EMBEDDED:
        found.append(Problem("PROMPTYARD_EMBEDDED", "set: it is the embedded default's (a random key, "
                                                    "the demo user); unset it"))
    if not settings.CONFIG_PUBLIC_KEY:
        found.append(Problem("CONFIG_PUBLIC_KEY", "not set: `manage.py config_keygen` prints "
                                                  "CONFIG_SIGNING_KEY (control plane) and CONFIG_PUBLIC_KEY"))
    if len(settings.METRICS_TOKEN) < 20:
        what = "too short (20 characters at least)" if settings.METRICS_TOKEN else "not set"
        found.append(Problem("METRICS_TOKEN", f"{what}: export METRICS_TOKEN=$({_TOKEN.format(n=32)})"))
    for name in ("S3_BUCKET", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY"):
        if not getattr(settings, name):
            found.append(Problem(name, "not set: the object store's bucket and credentials (S3_ENDPOINT_URL "
                                       "for a store other than AWS)"))
    return [p for p in found if p is not None]


@dataclass(frozen=True)
class Process:
    name: str  # honcho's: letters, digits, '_' and '-'
    argv: list[str]

    def line(self) -> str:
        # exec: honcho's shell becomes the process, which gets honcho's SIGTERM and whose
        # exit status honcho reports.
        return f"{self.name}: exec {shlex.join(self.argv)}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", text)


def processes(*, host: str, port: int) -> list[Process]:
    """Every process the settings call for: the server, one Celery worker per model
    queue, the webhooks worker and beat (with a broker), and a job driver per kind
    of background job that servers do not drive (EVAL_DISPATCH / BATCH_DISPATCH none).
    Workers get no pool or concurrency flags: the Celery config sizes them."""
    bin_dir = Path(sys.executable).parent
    manage = [sys.executable, str(settings.BASE_DIR / "manage.py")]
    celery = [str(bin_dir / "celery"), "-A", "config"]
    found = [Process("web", [*manage, "serve", "--host", host, "--port", str(port)])]
    if settings.CELERY_BROKER_URL:
        for served in served_names():
            queue = f"gpu.{served}"
            found.append(Process(_slug(queue), [*celery, "worker", "-Q", queue, "-n", f"{_slug(queue)}@%h"]))
        found.append(Process("webhooks", [*celery, "worker", "-Q", settings.WEBHOOK_QUEUE,
                                          "-n", f"{_slug(settings.WEBHOOK_QUEUE)}@%h"]))
        found.append(Process("beat", [*celery, "beat"]))
    if settings.EVAL_DISPATCH == "none":
        found.append(Process("eval_worker", [*manage, "eval_worker"]))
    if settings.BATCH_DISPATCH == "none":
        found.append(Process("batch_worker", [*manage, "batch_worker"]))
    return found


def served_names() -> list[str]:
    """The names that have a queue: each model, or each version of a versioned one."""
    names = []
    for model, spec in settings.INFERENCE_MODELS.items():
        versions = spec.get("versions") or {}
        names.extend([catalog.served_name(model, v) for v in versions] or [model])
    return names
