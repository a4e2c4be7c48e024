"""manage.py worker_ready --model NAME [--model NAME ...]

Exits 0 when a worker process on this host serves every named model (or
model@version), else 1 naming what is missing. It reads the readiness gate
itself: a worker heartbeats a model only once it fetched, verified and loaded
it, and the gateway routes to live, healthy heartbeats only (docs/operations.md).
Kubernetes runs it as a worker container's readinessProbe (deploy/k8s/workers.yaml):
a pod is ready exactly when the gateway would route to it.
"""

from __future__ import annotations

import socket

import redis
from django.core.management.base import BaseCommand, CommandError

from core import redis as core_redis
from inference_protocol.heartbeat import read_heartbeats


class Command(BaseCommand):
    help = "Exit 0 when a worker on this host serves every --model (its heartbeat is live and healthy)."

    def add_arguments(self, parser):
        parser.add_argument("--model", action="append", required=True,
                            help="a model or model@version (its queue is gpu.<model>); repeat for several")

    def handle(self, *args, model, **options):
        if not core_redis.enabled():
            raise CommandError("REDIS_URL is not set: workers publish their heartbeats in Redis.")
        host = socket.gethostname()
        try:
            records = read_heartbeats()
        except redis.RedisError as exc:
            raise CommandError(f"Redis unreachable ({type(exc).__name__}): no heartbeat to read.") from exc
        # A worker's id is host:pid (inference_worker.identity).
        ready = {r["model"] for r in records
                 if r["worker"].rpartition(":")[0] == host and r.get("healthy", True)}
        missing = [name for name in model if name not in ready]
        if missing:
            raise CommandError(f"not ready on {host}: no live, healthy heartbeat of {', '.join(missing)}")
        self.stdout.write(f"ready on {host}: {', '.join(model)}")
