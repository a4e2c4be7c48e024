"""Small line charts as SVG geometry for the version page's template: one
polyline per version over the same time buckets (no script, no style attribute:
the page's CSP allows neither)."""

from __future__ import annotations

import datetime

WIDTH, HEIGHT, PAD = 300, 80, 6

# (figure key, title, unit) of each chart on the page.
CHARTS = (("count", "Generations", ""), ("latency_p95_ms", "Latency p95", "ms"),
          ("latency_p50_ms", "Latency p50", "ms"), ("ttft_p50_ms", "TTFT p50", "ms"),
          ("error_rate", "Error rate", "%"), ("tokens_mean", "Completion tokens (mean)", ""),
          ("cost", "Cost", "$"))


def _series(buckets: list[dict], key: str, x_of, top: float) -> dict:
    points = [(x_of(b["at"]), b[key]) for b in buckets if b[key] is not None]
    scaled = [(x, HEIGHT - PAD - (y / top) * (HEIGHT - 2 * PAD) if top else HEIGHT - PAD) for x, y in points]
    return {"points": " ".join(f"{x:.1f},{y:.1f}" for x, y in scaled),
            "dots": [{"x": f"{x:.1f}", "y": f"{y:.1f}"} for x, y in scaled]}


def line_charts(current: list[dict], previous: list[dict] | None, *, since: datetime.datetime,
                until: datetime.datetime, charts: tuple = CHARTS) -> list[dict]:
    """Each chart of `charts` ((key, title, unit) rows) over the window
    since..until: its title, the top of its scale, and each version's line (a
    bucket at its start's time)."""
    span = max((until - since).total_seconds(), 1.0)

    def x_of(at: datetime.datetime) -> float:
        return PAD + min(max((at - since).total_seconds() / span, 0.0), 1.0) * (WIDTH - 2 * PAD)

    out = []
    for key, title, unit in charts:
        values = [b[key] for b in current + (previous or []) if b[key] is not None]
        top = float(max(values)) if values else 0.0
        shown_top = (f"{top * 100:.1f}%" if unit == "%" else f"${top:,.6f}" if unit == "$"
                     else f"{top:,.4g} {unit}".strip())
        out.append({"key": key, "title": title, "top": shown_top if values else None, "width": WIDTH,
                    "height": HEIGHT, "current": _series(current, key, x_of, top),
                    "previous": _series(previous, key, x_of, top) if previous is not None else None})
    return out
