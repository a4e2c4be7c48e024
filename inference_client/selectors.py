"""Reads for the gateway: models (configured and live), a user's usage."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Avg, Count, F, Q, Sum

from core import redis as rds
from core.redis import get_redis
from inference_client import admission
from inference_client.models import UsageRecord
from inference_protocol.backend import live_workers
from inference_protocol.catalog import model_names, split_served

# Models have no creation time of their own; OpenAI's shape wants one.
_CREATED = 1_700_000_000


def model_list() -> list[dict]:
    """Every configured model, plus any model a live worker serves, with live capacity."""
    live: dict[str, list[dict]] = {}
    for record in live_workers():  # a model@version worker counts for its model
        live.setdefault(split_served(record["model"])[0], []).append(record)
    configured = model_names()
    names = configured + sorted(set(live) - set(configured))
    return [{"id": name, "object": "model", "created": _CREATED, "owned_by": "promptyard",
             "live_workers": len(live.get(name, ())),
             "free_slots": sum(int(r.get("free_slots") or 0) for r in live.get(name, ()))}
            for name in names]


def usage_list(*, user, model: str | None = None, since: datetime | None = None):
    records = UsageRecord.objects.filter(user=user).select_related("api_key")
    if since is not None:
        records = records.filter(created_at__gte=since)
    return records.filter(model=model) if model else records


def usage_summary(*, user, model: str | None = None, since: datetime | None = None) -> dict:
    totals = usage_list(user=user, model=model, since=since).aggregate(
        requests=Count("id"), prompt_tokens=Sum("prompt_tokens"),
        completion_tokens=Sum("completion_tokens"), cache_hits=Count("id", filter=~Q(cache_hit="")),
        errors=Count("id", filter=~Q(status=UsageRecord.Status.OK)))
    return {k: v or 0 for k, v in totals.items()}


def usage_by_prompt_version(*, user, label: str | None = None) -> list[dict]:
    """Outcomes per saved prompt version (an A/B split's comparison): requests,
    errors, tokens and mean latency of the user's records that name a version."""
    rows = UsageRecord.objects.filter(user=user, prompt_version__isnull=False)
    if label:
        rows = rows.filter(prompt_label=label)
    versions = (rows.order_by().values("prompt_version", "prompt_label")
            .annotate(requests=Count("id"), errors=Count("id", filter=~Q(status=UsageRecord.Status.OK)),
                      completion_tokens=Sum("completion_tokens"), mean_latency_ms=Avg("latency_ms")))
    return [{"prompt_version": str(r["prompt_version"]), "prompt_label": r["prompt_label"] or None,
             "requests": r["requests"], "errors": r["errors"],
             "completion_tokens": r["completion_tokens"] or 0,
             "mean_latency_ms": round(r["mean_latency_ms"] or 0, 1)}
            for r in sorted(versions, key=lambda r: (str(r["prompt_version"]), r["prompt_label"]))]


def usage_by_key(*, user, since: datetime) -> dict[int, dict]:
    """Requests and tokens (prompt + completion) per API key since `since`."""
    rows = (UsageRecord.objects.filter(user=user, created_at__gte=since, api_key__isnull=False)
            .order_by().values("api_key").annotate(requests=Count("id"),
                                        tokens=Sum(F("prompt_tokens") + F("completion_tokens"))))
    return {r["api_key"]: {"requests": r["requests"], "tokens": r["tokens"] or 0} for r in rows}


def key_rate_limits(*, keys) -> dict[int, dict] | None:
    """Each key's per-minute buckets now ({"requests"|"tokens": {limit, remaining,
    reset_ms}}), read from Redis without charging them; None when admission is
    off (no REDIS_URL: nothing is limited)."""
    if not rds.enabled():
        return None
    per_key = {key.pk: admission.key_buckets(key_id=key.pk, tier=key.tier, tokens=0) for key in keys}
    flat = [bucket for buckets in per_key.values() for bucket in buckets]
    states = iter(admission.peek(buckets=flat, redis=get_redis()) if flat else ())
    return {pk: {bucket.name: next(states) for bucket in buckets} for pk, buckets in per_key.items()}
