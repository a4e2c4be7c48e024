"""An evaluation run's aggregates: per column and evaluator, the mean score,
its bootstrap interval, the pass rate and a histogram; with repeats, how much
a row's score moves between them."""

from __future__ import annotations

import numpy as np
from django.conf import settings

from .models import EvalResult, EvalRun


def bootstrap_ci(values, *, resamples: int | None = None, seed: int = 0) -> tuple[float, float]:
    """95% percentile-bootstrap interval of the mean (deterministic: seeded)."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return (0.0, 0.0)
    if data.size == 1 or np.all(data == data[0]):
        return (float(data[0]), float(data[0]))
    resamples = resamples or settings.EVAL_BOOTSTRAP_RESAMPLES
    resamples = max(100, min(resamples, 20_000_000 // data.size))  # bound the work on huge runs
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return (float(low), float(high))


def _spread(rows: list, values: list[float], passes: list[bool]) -> dict:
    """Across a run's repeats: the mean over rows of each row's score standard
    deviation, the largest one, and the rows whose repeats did not all pass or all fail."""
    scores: dict = {}
    passed: dict = {}
    for row, value, ok in zip(rows, values, passes, strict=True):
        scores.setdefault(row, []).append(value)
        passed.setdefault(row, set()).add(ok)
    deviations = [float(np.std(v)) for v in scores.values()]
    return {"row_sd_mean": float(np.mean(deviations)) if deviations else 0.0,
            "row_sd_max": max(deviations, default=0.0),
            "unstable_rows": sum(1 for outcomes in passed.values() if len(outcomes) > 1)}


def run_summary(run: EvalRun) -> dict:
    """Per column: cells, failures, per evaluator mean (a failed cell scores 0),
    its 95% bootstrap interval, pass rate and score histogram; latency p50/p95; tokens;
    how many cells each model@version served."""
    keys = [spec["key"] for spec in run.evaluators]
    out = {"columns": []}
    for column in run.columns.order_by("index"):
        cells = list(EvalResult.objects.filter(column=column).values_list(
            "scores", "error_code", "latency_ms", "prompt_tokens", "completion_tokens", "passed", "served",
            "row_id"))
        latencies = [c[2] for c in cells if c[2] is not None]
        served: dict[str, int] = {}
        for c in cells:
            if c[6]:
                served[c[6]] = served.get(c[6], 0) + 1
        entry = {"column": column.index, "cells": len(cells), "failed": sum(1 for c in cells if c[1]),
                 "passed": sum(1 for c in cells if c[5]),
                 "prompt_tokens": sum(c[3] for c in cells), "completion_tokens": sum(c[4] for c in cells),
                 "latency_ms_p50": float(np.percentile(latencies, 50)) if latencies else None,
                 "latency_ms_p95": float(np.percentile(latencies, 95)) if latencies else None,
                 "served": dict(sorted(served.items())),  # model@version -> cells it served
                 "scores": {}}
        for key in keys:
            values = [(c[0].get(key) or {}).get("score", 0.0) if not c[1] else 0.0 for c in cells]
            passes = [bool((c[0].get(key) or {}).get("passed")) for c in cells]
            low, high = bootstrap_ci(values)
            # The distribution for the page's chart: ten bins of 0.1 (a score of 1 in the last).
            tenths = (np.asarray(values, dtype=float) * 10).astype(int)
            bins = np.bincount(np.minimum(tenths, 9), minlength=10)
            entry["scores"][key] = {"mean": float(np.mean(values)) if values else 0.0, "ci95": [low, high],
                                    "pass_rate": (sum(passes) / len(passes)) if passes else 0.0,
                                    "histogram": [int(b) for b in bins]}
            if run.repeats > 1:
                entry["scores"][key].update(_spread([c[7] for c in cells], values, passes))
        out["columns"].append(entry)
    return out
