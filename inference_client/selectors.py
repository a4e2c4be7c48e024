"""Reads for the gateway: models (configured and live), a user's usage."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Count, Q, Sum

from inference_client.models import UsageRecord
from inference_worker.heartbeat import live_workers

# Models have no creation time of their own; OpenAI's shape wants one.
_CREATED = 1_700_000_000


def model_list() -> list[dict]:
    """Every configured model, plus any model a live worker serves, with live capacity."""
    live: dict[str, list[dict]] = {}
    for record in live_workers():
        live.setdefault(record["model"], []).append(record)
    names = list(settings.INFERENCE_MODELS) + sorted(set(live) - set(settings.INFERENCE_MODELS))
    return [{"id": name, "object": "model", "created": _CREATED, "owned_by": "promptyard",
             "live_workers": len(live.get(name, ())),
             "free_slots": sum(int(r.get("free_slots") or 0) for r in live.get(name, ()))}
            for name in names]


def usage_list(*, user, model: str | None = None):
    records = UsageRecord.objects.filter(user=user).select_related("api_key")
    return records.filter(model=model) if model else records


def usage_summary(*, user, model: str | None = None) -> dict:
    totals = usage_list(user=user, model=model).aggregate(
        requests=Count("id"), prompt_tokens=Sum("prompt_tokens"),
        completion_tokens=Sum("completion_tokens"), cache_hits=Count("id", filter=~Q(cache_hit="")),
        errors=Count("id", filter=~Q(status=UsageRecord.Status.OK)))
    return {k: v or 0 for k, v in totals.items()}
