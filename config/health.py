"""/healthz: one line per part the app depends on; 503 when any is down.

Anyone (a load balancer) sees ok/error per part; what each part is and why it
failed (hosts, ports, buckets) only a scraper with METRICS_TOKEN or staff
(core/monitoring.py)."""

import time
import uuid

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import JsonResponse

from core.monitoring import monitoring_allowed


def _database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return connection.vendor


def _cache() -> str:
    key = f"healthz:{uuid.uuid4().hex}"
    cache.set(key, "1", 5)
    if cache.get(key) != "1":
        raise RuntimeError("value written was not read back")
    cache.delete(key)
    return settings.CACHES["default"]["BACKEND"].rsplit(".", 1)[-1]


def _channel_layer() -> str:
    layer = get_channel_layer()

    async def roundtrip():
        channel = await layer.new_channel()
        await layer.send(channel, {"type": "healthz"})
        return await layer.receive(channel)

    if async_to_sync(roundtrip)().get("type") != "healthz":
        raise RuntimeError("message sent was not received")
    return layer.__class__.__name__


def _broker() -> str:
    if not settings.CELERY_BROKER_URL:
        return "in-process worker"
    from config.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)
        return conn.transport_cls if isinstance(conn.transport_cls, str) else conn.transport.driver_type


def _object_store() -> str:
    from core.blobstore import get_blob_store

    store = get_blob_store()
    store.check()
    return store.describe()


CHECKS = {
    "database": _database,
    "cache": _cache,
    "channel_layer": _channel_layer,
    "broker": _broker,
    "object_store": _object_store,
}


def healthz(request):
    parts, healthy = {}, True
    for name, check in CHECKS.items():
        started = time.perf_counter()
        try:
            detail = check()
            parts[name] = {"status": "ok", "detail": detail}
        except Exception as exc:  # a health check reports every failure, whatever it is
            healthy = False
            parts[name] = {"status": "error", "error": f"{exc.__class__.__name__}: {exc}"}
        parts[name]["ms"] = round((time.perf_counter() - started) * 1000, 1)
    if not monitoring_allowed(request):
        parts = {name: {"status": part["status"]} for name, part in parts.items()}
    return JsonResponse({"status": "ok" if healthy else "error", "parts": parts},
                        status=200 if healthy else 503)
