"""The canary's judgement in a rollout (inference_client.control.rollout): one
window's figures of a version, from its usage records, and the verdict on a
canary against the stable version."""

from __future__ import annotations

import dataclasses

from inference_client.models import UsageRecord


@dataclasses.dataclass(frozen=True)
class Figures:
    requests: int
    errors: int
    p99_ms: float

    @property
    def error_rate(self) -> float:
        return self.errors / self.requests if self.requests else 0.0

    def as_dict(self) -> dict:
        return {"requests": self.requests, "errors": self.errors,
                "error_rate": round(self.error_rate, 4), "p99_ms": self.p99_ms}


def window_figures(*, model: str, version: str, since) -> Figures:
    rows = list(UsageRecord.objects.filter(model=model, version=version, created_at__gte=since)
                .exclude(status=UsageRecord.Status.CANCELLED).values_list("status", "latency_ms"))
    latencies = sorted(ms for _, ms in rows)
    p99 = float(latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]) if latencies else 0.0
    return Figures(len(rows), sum(1 for status, _ in rows if status == UsageRecord.Status.ERROR), p99)


def decide(canary: Figures, stable: Figures, thresholds: dict) -> tuple[str, str]:
    """("continue" | "rollback", why), from one window's figures."""
    if canary.requests == 0:
        return "rollback", "the canary served no request in the window"
    delta = canary.error_rate - stable.error_rate
    if delta > thresholds["max_error_rate_delta"]:
        return "rollback", (f"canary error rate {canary.error_rate:.1%} vs stable {stable.error_rate:.1%}: "
                            f"+{delta:.1%} > {thresholds['max_error_rate_delta']:.1%}")
    if stable.p99_ms > 0 and canary.p99_ms > stable.p99_ms * thresholds["max_p99_ratio"]:
        return "rollback", (f"canary p99 {canary.p99_ms:.0f} ms vs stable {stable.p99_ms:.0f} ms: "
                            f"x{canary.p99_ms / stable.p99_ms:.2f} > x{thresholds['max_p99_ratio']}")
    return "continue", (f"canary error rate {canary.error_rate:.1%} vs stable {stable.error_rate:.1%}, "
                        f"p99 {canary.p99_ms:.0f} vs {stable.p99_ms:.0f} ms: within thresholds")
