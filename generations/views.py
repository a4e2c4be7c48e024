"""The version's generations page: its figures beside the previous version's,
then its generations (filters, newest first, paged by (time, id))."""

from __future__ import annotations

from django.db.models import Q
from django.shortcuts import render
from django.utils.http import urlencode

from core.errors import page_not_found
from playground import selectors as prompt_selectors
from sharing.kinds import Role

from .api import LIST_HEAD_CHARS, comparison
from .charts import line_charts
from .selectors import STATUSES, generation_list, prompt_for_log

PAGE_SIZE = 50
DAYS = (1, 7, 30, 90)


def _filters(request) -> dict:
    get = request.GET
    days = int(get["days"]) if get.get("days", "").isdigit() and int(get["days"]) in DAYS else 7
    before = int(get["before"]) if get.get("before", "").isdigit() else None
    status = get.get("status", "")
    return {"label": get.get("label", "")[:63], "status": status if status in STATUSES else "",
            "model": get.get("model", "")[:100], "q": get.get("q", "")[:200], "days": days, "before": before}


def _ms(value) -> str:
    return "–" if value is None else f"{value:,.0f} ms"


def _shown(t: dict | None) -> dict:
    """A version's totals as the table shows them."""
    if t is None:
        return {}
    mean_ci, rate_ci = t["latency_mean_ci"], t["error_rate_ci"]
    return {
        "count": f"{t['count']:,}", "p50": _ms(t["latency_p50_ms"]), "p95": _ms(t["latency_p95_ms"]),
        "mean": _ms(t["latency_mean_ms"]) + (f" ({mean_ci[0]:,.0f}–{mean_ci[1]:,.0f})" if mean_ci else ""),
        "ttft": _ms(t["ttft_p50_ms"]),
        "tokens": "–" if t["tokens_mean"] is None else f"{t['tokens_mean']:,.1f}",
        "cost": "–" if t["cost"] is None else f"${t['cost']:,.6f}",
        "errors": "–" if t["error_rate"] is None else
        f"{t['error_rate'] * 100:.1f}% ({rate_ci[0] * 100:.1f}–{rate_ci[1] * 100:.1f}%)"}


TOTAL_ROWS = (("count", "Generations"), ("p50", "Latency p50"), ("p95", "Latency p95"),
              ("mean", "Latency mean (95% CI)"), ("ttft", "TTFT p50"), ("tokens", "Completion tokens (mean)"),
              ("cost", "Cost"), ("errors", "Error rate (95% CI)"))


def _eval_rows(figures: dict) -> list[dict]:
    """The evaluation runs of the version and the one compared with, oldest first."""
    rows = []
    for side in (figures["version"], figures["previous"]):
        for run in (side or {}).get("evals", []):
            scores = ", ".join(f"{key} {s['mean']:.2f} ({s['ci95'][0]:.2f}–{s['ci95'][1]:.2f})"
                               for key, s in run["scores"].items())
            rows.append({**run, "number": side["number"], "shown": scores or "no evaluator"})
    return sorted(rows, key=lambda row: row["finished_at"])


def _score(s: dict | None) -> str:
    if not s or s["mean"] is None:
        return "–"
    return (f"{s['mean']:.2f} ({s['ci95'][0]:.2f}–{s['ci95'][1]:.2f}) · pass {s['pass_rate'] * 100:.0f}% "
            f"· n={s['count']:,}" + (f" · {s['failed']} unscored" if s["failed"] else ""))


def _online(figures: dict) -> tuple[list[dict], list[dict]]:
    """Per evaluator key: the row of the online scores table (this version and
    the one compared with), and its mean score's chart over the window."""
    current, previous = figures["version"]["online"], (figures["previous"] or {}).get("online")
    rows, charts = [], []
    for key in sorted(set(current) | set(previous or {})):
        mine, theirs = current.get(key), (previous or {}).get(key)
        rows.append({"key": key, "current": _score(mine), "previous": _score(theirs)})
        charts += line_charts((mine or {}).get("buckets", []),
                              None if previous is None else (theirs or {}).get("buckets", []),
                              since=figures["since"], until=figures["until"],
                              charts=(("mean", f"{key}: mean score", ""),))
    return rows, charts


def version_generations(request, prompt_id, version_id):
    with page_not_found("Version"):
        prompt = prompt_for_log(request, prompt_id=prompt_id)
        version = prompt_selectors.version_get(prompt=prompt, version_id=version_id)
    f = _filters(request)
    figures = comparison(user=request.user, prompt=prompt, version=version, label=f["label"], days=f["days"],
                         bucket="hour" if f["days"] <= 7 else "day")
    rows = generation_list(prompt=prompt, version_id=version.pk, label=f["label"], status=f["status"],
                           model=f["model"], search=f["q"])
    if f["before"] is not None and (last := rows.filter(pk=f["before"]).values("created_at").first()):
        rows = rows.filter(Q(created_at__lt=last["created_at"]) | Q(created_at=last["created_at"],
                                                                   id__lt=f["before"]))
    page = list(rows[:PAGE_SIZE + 1])
    kept = {k: v for k, v in f.items() if v and k != "before"}
    older = (f"?{urlencode({**kept, 'before': page[PAGE_SIZE - 1].pk})}" if len(page) > PAGE_SIZE else None)
    previous = figures["previous"]
    current_shown = _shown(figures["version"]["total"])
    previous_shown = _shown(previous["total"] if previous else None)
    totals = [{"name": name, "current": current_shown[key], "previous": previous_shown.get(key)}
              for key, name in TOTAL_ROWS]
    online_rows, online_charts = _online(figures)
    return render(request, "generations/version.html", {
        "prompt": prompt, "version": version, "filters": f, "days_choices": DAYS, "statuses": STATUSES,
        "figures": figures, "previous": previous, "totals": totals, "eval_rows": _eval_rows(figures),
        "online_rows": online_rows, "online_charts": online_charts,
        "charts": line_charts(figures["version"]["buckets"], previous["buckets"] if previous else None,
                              since=figures["since"], until=figures["until"]),
        "generations": page[:PAGE_SIZE], "older": older, "newest": f"?{urlencode(kept)}",
        "head_chars": LIST_HEAD_CHARS,
        "config": {"prompt": {"id": str(prompt.pk)}, "version": str(version.pk),
                   "role": Role(prompt.access_role).name.lower()},
    })
