"""`manage.py doctor`: every dependency and process of a production stack, one
line each (ok / warn / fail, and what to do)."""

from __future__ import annotations

import datetime
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from config import production
from core.liveness import last_seen
from core.redis import get_redis
from inference_protocol import catalog, config_document, heartbeat

OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass(frozen=True)
class Line:
    status: str
    part: str
    text: str

    def __str__(self) -> str:
        return f"{self.status:<4}  {self.part}: {self.text}"


Check = Callable[[], Iterator[Line]]


def _settings() -> Iterator[Line]:
    problems = production.problems()
    for problem in problems:
        yield Line(FAIL, f"setting {problem.setting}", problem.message)
    if not problems:
        yield Line(OK, "settings", "every setting a production stack needs is set")


def _database() -> Iterator[Line]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    yield Line(OK, "database", f"{connection.vendor} at {connection.settings_dict['HOST']}")


def _migrations() -> Iterator[Line]:
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        first = plan[0][0]
        yield Line(FAIL, "migrations", f"{len(plan)} not applied (first {first.app_label}.{first.name}): "
                                       "run `manage.py migrate`")
    else:
        yield Line(OK, "migrations", "all applied")


def _redis() -> Iterator[Line]:
    get_redis().ping()
    yield Line(OK, "redis", "answers PING")


def _broker() -> Iterator[Line]:
    from config.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)
        transport = conn.transport.driver_type
    if transport == "amqp":
        yield Line(OK, "broker", "RabbitMQ (amqp)")
    else:
        yield Line(WARN, "broker", f"{transport}: a dead worker's requests wait for a visibility timeout; "
                                   "prefer RabbitMQ (CELERY_BROKER_URL=amqp://...)")


def _object_store(*, create: bool) -> Callable[[], Iterator[Line]]:
    def check() -> Iterator[Line]:
        from botocore.exceptions import ClientError

        from core.blobstore import get_blob_store

        store = get_blob_store()
        try:
            store.ensure_bucket() if create else store.check()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchBucket"):
                yield Line(FAIL, "object store", f"bucket {settings.S3_BUCKET!r} does not exist: create it "
                                                 "(`manage.py serve` does at start) or fix S3_BUCKET")
                return
            raise
        key = f"doctor/{uuid.uuid4().hex}"
        store.put(key, b"doctor")
        store.delete(key)
        yield Line(OK, "object store", f"{store.describe()}: reachable and writable")
    return check


def _config() -> Iterator[Line]:
    from inference_protocol.config import latest_key

    raw = get_redis().get(latest_key())
    if raw is None:
        yield Line(WARN, "config document", "none published: every process runs on document 0 (the "
                                            "environment); publish one with `manage.py config_publish`")
        return
    doc = config_document.ConfigDocument.from_json(raw)
    try:
        doc.verify(settings.CONFIG_PUBLIC_KEY)
    except config_document.ConfigError as exc:
        yield Line(FAIL, "config document", f"{exc}: CONFIG_PUBLIC_KEY must be the pair of the control "
                                            "plane's CONFIG_SIGNING_KEY")
        return
    yield Line(OK, "config document", f"document {doc.number} verifies with CONFIG_PUBLIC_KEY")


def _weights(served: str, spec: dict) -> Line:
    part = f"weights {served}"
    checkpoint = spec.get("checkpoint")
    if checkpoint:
        states = [(node["worker"], (node.get("checkpoints") or {}).get(served))
                  for node in heartbeat.read_nodes()]
        states = [(worker, entry) for worker, entry in states if entry]
        failed = [f"{worker}: {entry.get('reason', '')}" for worker, entry in states
                  if entry.get("state") == heartbeat.FAILED]
        if failed:
            return Line(FAIL, part, f"verification failed on {'; '.join(failed)}: republish with "
                                    "`manage.py model_publish` or fix the worker's MODEL_CACHE_DIR")
        if any(entry.get("state") == heartbeat.PRESENT for _, entry in states):
            return Line(OK, part, "checkpoint present and verified on a worker")
        return Line(WARN, part, "no worker holds the checkpoint yet: start its worker "
                                "(it fetches and verifies it)")
    engine = spec.get("engine")
    if engine in ("llamacpp", "llamacpp_embeddings") and (spec.get("model_path") or engine == "llamacpp"):
        from inference_worker.engines.gguf import default_model_path

        path = Path(spec.get("model_path") or default_model_path())
        with path.open("rb") as f:
            magic = f.read(4)
        if magic != b"GGUF":
            return Line(FAIL, part, f"{path} is not a GGUF file: point model_path at one")
        return Line(OK, part, f"{path.name} present (GGUF)")
    if engine in ("transformers", "llamacpp_embeddings"):
        from inference_worker.engines.bert_gguf import default_checkpoint_dir

        path = Path(spec.get("model_dir", "") if engine == "transformers"
                    else spec.get("checkpoint_dir") or default_checkpoint_dir())
        if not (path / "config.json").is_file():
            return Line(FAIL, part, f"{path} has no config.json: point the spec at a model directory")
        return Line(OK, part, f"{path} present")
    return Line(OK, part, f"engine {spec.get('engine')} loads no weights")


def _models() -> Iterator[Line]:
    for served in production.served_names():
        yield from _guarded(f"weights {served}",
                            lambda served=served: iter([_weights(served, catalog.model_spec(served))]))
        workers = heartbeat.read_heartbeats(served)
        if workers:
            yield Line(OK, f"queue gpu.{served}", f"{len(workers)} worker(s) alive")
        else:
            yield Line(FAIL, f"queue gpu.{served}", "no live worker (no heartbeat): start "
                                                    f"`celery -A config worker -Q gpu.{served}`")


def _webhooks() -> Iterator[Line]:
    from config.celery import app

    replies = app.control.inspect(timeout=1.0).active_queues() or {}
    consumers = [worker for worker, queues in replies.items()
                 if any(q["name"] == settings.WEBHOOK_QUEUE for q in queues)]
    if consumers:
        yield Line(OK, f"queue {settings.WEBHOOK_QUEUE}", f"{len(consumers)} worker(s) alive")
    else:
        queue = settings.WEBHOOK_QUEUE
        yield Line(FAIL, f"queue {queue}", f"no worker answers: start `celery -A config worker -Q {queue}`")


def _alive(name: str, part: str, start: str) -> Line:
    seen = last_seen(name)
    if seen is None:
        return Line(FAIL, part, f"not seen running: start `{start}`")
    return Line(OK, part, f"alive ({time.time() - seen:.0f} s ago)")


def _drivers() -> Iterator[Line]:
    from evals.import_job import IMPORT_JOB
    from evals.run_job import RUN_JOB
    from inference_client.batch_job import BATCH_JOB

    yield _alive("beat", "beat", "celery -A config beat")
    now = timezone.now()
    for kind, command in ((RUN_JOB, "eval_worker"), (IMPORT_JOB, "eval_worker"), (BATCH_JOB, "batch_worker")):
        if getattr(settings, kind.dispatch_setting) != "none":
            continue
        yield _alive(f"driver:{kind.name}", f"driver {kind.name}", f"manage.py {command}")
        # A lease run out by more than its length: no driver took the job over.
        stale = now - datetime.timedelta(seconds=2 * getattr(settings, kind.lease_setting))
        abandoned = kind.active_rows().filter(**{f"{kind.until_field}__lt": stale}).count()
        if abandoned:
            yield Line(WARN, f"leases {kind.name}", f"{abandoned} active job(s) whose lease ran out long "
                                                   f"ago: is `manage.py {command}` running?")


# What to look at when a service's check raises.
_FIX = {"database": "check DATABASE_URL and that PostgreSQL runs there",
        "redis": "check REDIS_URL and that Redis runs there",
        "broker": "check CELERY_BROKER_URL and that the broker runs there",
        "object store": "check S3_ENDPOINT_URL, S3_BUCKET and the S3 keys"}


def _guarded(part: str, check: Check) -> Iterator[Line]:
    """A check's lines; a check that raises is one failing line naming the error."""
    try:
        yield from check()
    except Exception as exc:  # the doctor reports every failure, whatever it is
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        fix = f": {_FIX[part]}" if part in _FIX else ""
        yield Line(FAIL, part, f"{exc.__class__.__name__} {first}{fix}")


def run(*, before_start: bool = False) -> Iterator[Line]:
    """Every line; ``before_start``: only what a stack needs before it starts
    (settings, services, the bucket made if missing), not migrations or processes."""
    checks: list[tuple[str, Check]] = [
        ("settings", _settings), ("database", _database), ("redis", _redis), ("broker", _broker),
        ("object store", _object_store(create=before_start)),
    ]
    if not before_start:
        checks += [("migrations", _migrations), ("config document", _config), ("models", _models),
                   ("webhooks", _webhooks), ("drivers", _drivers)]
    for part, check in checks:
        yield from _guarded(part, check)
