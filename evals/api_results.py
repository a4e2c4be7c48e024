"""An evaluation run's results grid, a page of rows at a time (datasets are in
api.py, runs in api_runs.py). What the reader may not see of a column's prompt
is redacted (visibility)."""

from __future__ import annotations

import re

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from core.error_codes import DomainError
from playground.matching import Budget

from .api import LIMIT, PAGE_MAX, START, int_param, refuse_unknown_params
from .models import EvalResult
from .permissions import access_run
from .serializers import ResultPageSerializer
from .visibility import hidden_judges, redact_cell, visibility_for

TOKEN = re.compile(r"\s+|[^\s]+")
DIFF_MAX_CHARS = 4000


def output_diff(base: str, other: str, budget: Budget) -> list[list[str]]:
    """Word diff of `other` against `base`: [["=" | "-" | "+", text], ...]; the
    words of both past the budget's deadline are one change."""
    a, b = TOKEN.findall(base[:DIFF_MAX_CHARS]), TOKEN.findall(other[:DIFF_MAX_CHARS])
    out = []
    for op, i1, i2, j1, j2 in budget.opcodes(a, b):
        if op == "equal":
            out.append(["=", "".join(a[i1:i2])])
            continue
        if i2 > i1:
            out.append(["-", "".join(a[i1:i2])])
        if j2 > j1:
            out.append(["+", "".join(b[j1:j2])])
    return out


def _cell(result: EvalResult) -> dict:
    return {"column": result.column.index, "repeat": result.repeat, "output": result.output,
            "tool_calls": result.tool_calls,
            "error": result.error_code or None,
            "error_message": result.error_message or None, "scores": result.scores, "passed": result.passed,
            "latency_ms": result.latency_ms, "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens, "served": result.served or None,
            "cache_hit": result.cache_hit or None, "redacted": False}


class EvalResultsApi(APIView):
    @extend_schema(parameters=[
        OpenApiParameter("start", START, description="First row index (default 0)"),
        OpenApiParameter("limit", LIMIT, description=f"Rows per page (default 100, max {PAGE_MAX})"),
        OpenApiParameter("filter", str, enum=["failed", "disagree"],
                         description="failed: rows where some cell did not pass; disagree: rows where the "
                                     "columns do not all pass or all fail")],
        responses=ResultPageSerializer,
        description="The grid, a page of rows at a time: each row's cells (one per column and repeat), "
                    "their scores and a word diff against the first column's (first repeat's) output.")
    def get(self, request, run_id):
        refuse_unknown_params(request, {"start", "limit", "filter"})
        run = access_run(user=request.user, run_id=run_id)
        seen = visibility_for(user=request.user, runs=[run])
        judges = hidden_judges(run, seen)
        start = int_param(request, "start", 0)
        limit = int_param(request, "limit", 100, low=1, high=PAGE_MAX)
        which = request.query_params.get("filter")
        if which not in (None, "failed", "disagree"):
            raise DomainError("filter is failed or disagree.", code="invalid_request", field="filter")
        row_count = run.dataset_version.row_count
        budget = Budget(settings.EVAL_DIFF_TIMEOUT_S)  # for all the page's word diffs
        out, cursor = [], start
        while len(out) < limit and cursor < row_count:
            span = limit if which is None else max(limit, 500)
            results = (EvalResult.objects.filter(run=run, row_index__gte=cursor, row_index__lt=cursor + span)
                       .select_related("column__prompt_version", "row")
                       .order_by("row_index", "column__index", "repeat"))
            grouped: dict[int, list[EvalResult]] = {}
            for result in results:
                grouped.setdefault(result.row_index, []).append(result)
            for index in sorted(grouped):
                cells = grouped[index]
                passed = [c.passed is True for c in cells]
                if which == "failed" and all(passed):
                    continue
                if which == "disagree" and (len(set(passed)) < 2):
                    continue
                row = cells[0].row
                # The diff is against the first column's output: none when the reader may not see it.
                first = cells[0].output if cells[0].column.index == 0 and seen.column(cells[0].column) \
                    else None
                entries = []
                for cell in cells:
                    entry = _cell(cell)
                    if first is not None and cell.column.index > 0 and not cell.error_code:
                        entry["diff"] = output_diff(first, cell.output, budget)
                    entries.append(redact_cell(entry, column_visible=seen.column(cell.column), judges=judges))
                out.append({"row_index": index, "variables": row.variables, "expected": row.expected,
                            "cells": entries})
                if len(out) == limit:
                    cursor = index + 1
                    break
            else:
                cursor += span
        nxt = cursor if cursor < row_count and (len(out) == limit) else None
        return Response({"rows": out, "next": nxt})
