"""A version's figures from its generations: per time bucket and over the
window, with 95% confidence intervals for the mean latency (normal) and the
error rate (Wilson). On PostgreSQL the database computes them (percentile_cont
over the version's index); elsewhere (SQLite, the embedded default) Python does."""

from __future__ import annotations

import datetime
import math
import statistics

from django.db import connection
from django.db.models import Aggregate, Avg, Count, FloatField, Q, StdDev, Sum
from django.db.models.functions import TruncDay, TruncHour

from .models import Generation

Z95 = 1.96


class Percentile(Aggregate):
    """PostgreSQL's percentile_cont(p) WITHIN GROUP (ORDER BY expression)."""
    function = "PERCENTILE_CONT"
    template = "%(function)s(%(p)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression, p: float):
        super().__init__(expression, p=p)


def _quantile(values: list[float], p: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    at = (len(values) - 1) * p
    low = math.floor(at)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (at - low)


def wilson(errors: int, n: int) -> tuple[float, float] | None:
    """The 95% Wilson interval of a rate of errors out of n."""
    if n == 0:
        return None
    rate = errors / n
    denominator = 1 + Z95 ** 2 / n
    centre = (rate + Z95 ** 2 / (2 * n)) / denominator
    half = Z95 * math.sqrt(rate * (1 - rate) / n + Z95 ** 2 / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def _figures(count: int, errors: int, mean: float | None, sd: float | None, p50, p95, ttft50, tokens, cost
             ) -> dict:
    half = Z95 * sd / math.sqrt(count) if sd is not None and count > 1 else None
    return {"count": count, "errors": errors, "error_rate": errors / count if count else None,
            "error_rate_ci": wilson(errors, count), "latency_mean_ms": mean,
            "latency_mean_ci": (mean - half, mean + half) if half is not None and mean is not None else None,
            "latency_p50_ms": p50, "latency_p95_ms": p95, "ttft_p50_ms": ttft50,
            "tokens_mean": tokens, "cost": float(cost) if cost is not None else None}


def _sql(rows, trunc) -> tuple[list[dict], dict]:
    measures = dict(count=Count("id"), errors=Count("id", filter=~Q(status="ok")), mean=Avg("latency_ms"),
                    sd=StdDev("latency_ms", sample=True), p50=Percentile("latency_ms", 0.5),
                    p95=Percentile("latency_ms", 0.95), ttft50=Percentile("ttft_ms", 0.5),
                    tokens=Avg("completion_tokens"), cost=Sum("cost"))
    grouped = rows.annotate(at=trunc("created_at")).values("at").annotate(**measures).order_by("at")
    buckets = [{"at": b.pop("at"), **_figures(**b)} for b in grouped]
    return buckets, _figures(**rows.aggregate(**measures))


def _python(rows, trunc) -> tuple[list[dict], dict]:
    grouped: dict = {}
    for row in rows.annotate(at=trunc("created_at")).values("at", "status", "latency_ms", "ttft_ms",
                                                             "completion_tokens", "cost"):
        grouped.setdefault(row["at"], []).append(row)
    everything = [row for group in grouped.values() for row in group]

    def figures(group: list[dict]) -> dict:
        latencies = [r["latency_ms"] for r in group]
        ttfts = [r["ttft_ms"] for r in group if r["ttft_ms"] is not None]
        costs = [r["cost"] for r in group if r["cost"] is not None]
        return _figures(
            len(group), sum(r["status"] != "ok" for r in group),
            statistics.fmean(latencies) if latencies else None,
            statistics.stdev(latencies) if len(latencies) > 1 else None,
            _quantile(latencies, 0.5), _quantile(latencies, 0.95), _quantile(ttfts, 0.5),
            statistics.fmean(r["completion_tokens"] for r in group) if group else None,
            sum(costs) if costs else None)

    return [{"at": at, **figures(group)} for at, group in sorted(grouped.items())], figures(everything)


def version_metrics(*, version_id, since: datetime.datetime, label: str = "", bucket: str = "hour") -> dict:
    """{"buckets": [...], "total": {...}} of the version's generations since `since`
    (only those run through `label` when given)."""
    rows = Generation.objects.filter(version_id=version_id, created_at__gte=since)
    if label:
        rows = rows.filter(label=label)
    trunc = TruncDay if bucket == "day" else TruncHour
    compute = _sql if connection.vendor == "postgresql" else _python
    buckets, total = compute(rows.order_by(), trunc)
    return {"buckets": buckets, "total": total}
