"""Evaluations benchmark, run by hand (PostgreSQL via DATABASE_URL, or SQLite):

    DATABASE_URL=postgres://... .venv/bin/python bench/evals.py [--quick] [--rows N]

It creates a throwaway database (<db>_bench) and prints, for a dataset of N rows
(10,000; --quick 2,000), each figure with a baseline measured in the same run:
- importing a CSV through the API (parse, check, one new version) vs. a bare
  bulk INSERT of the same rows;
- running it (one column, the fixed-cost engine on the in-process worker, batch
  priority through the gateway's batch lane, scored by exact) vs. submitting the
  same generations straight to the backend with no database and no gateway: the
  run's overhead per cell (with REDIS_URL set, admission, the cache and usage
  records are in it);
- opening the finished run the way the page does (run + first 100 grid rows) vs.
  a trivial API call; computing its summary (bootstrap intervals) alone.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
MODEL = "bench-fixed-cost"


def timed(fn, repeat=5):
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return statistics.median(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rows", type=int, default=None)
    args = parser.parse_args()
    rows = args.rows or (2000 if args.quick else 10_000)

    import django
    from django.conf import settings

    os.environ.setdefault("SECRET_KEY", "bench-secret-key-not-for-production")
    os.environ.setdefault("SECURE_HTTPS", "false")  # the test client speaks plain HTTP
    django.setup()
    settings.INFERENCE_MODELS = {
        **settings.INFERENCE_MODELS,
        MODEL: {"engine": "fixed_cost", "max_inputs": 64, "call_s": 0.002},
    }
    settings.EVAL_DISPATCH = "none"
    # With REDIS_URL the cells pass admission: limits far above the run, so this
    # measures the path's cost, not the tier's pace.
    settings.RATE_LIMITS = {tier: {"requests_per_min": 10**8, "tokens_per_min": 10**10}
                            for tier in settings.RATE_LIMITS}
    settings.ALLOWED_HOSTS = ["*"]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    from django.db import connection

    db = settings.DATABASES["default"]
    db.setdefault("TEST", {})["NAME"] = f"{db['NAME']}_bench"
    original = db["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        run_bench(rows)
    finally:
        connection.creation.destroy_test_db(original, verbosity=0)


def run_bench(rows: int):
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    from evals.models import DatasetRow, DatasetVersion, EvalRun
    from evals.run_job import evalrun_drive
    from evals.summary import run_summary
    from inference_protocol.backend import get_backend
    from inference_protocol.generation import GenerationRequest
    from playground import services

    user = get_user_model().objects.create_user("bench", password="x")
    client = APIClient()
    client.force_login(user)
    print(f"rows: {rows}")

    # 1. Import vs bulk INSERT.
    csv = "q,expected\n" + "".join(f"question {i},{f'question {i}'[::-1]}\n" for i in range(rows))
    dataset = client.post("/api/datasets/", {"name": "bench"}, format="json").json()
    start = time.perf_counter()
    response = client.post(
        f"/api/datasets/{dataset['id']}/import", {"text": csv, "format": "csv"}, format="json"
    )
    import_s = time.perf_counter() - start
    assert response.status_code == 201, response.json()
    version_id = response.json()["version"]["id"]
    version = DatasetVersion.objects.get(pk=version_id)
    scratch = DatasetVersion.objects.create(dataset=version.dataset, number=999, row_count=rows)
    start = time.perf_counter()
    DatasetRow.objects.bulk_create(
        [
            DatasetRow(version=scratch, index=i, variables={"q": f"question {i}"},
                       expected=f"question {i}"[::-1])
            for i in range(rows)
        ],
        batch_size=2000,
    )
    bulk_s = time.perf_counter() - start
    print(
        f"import via API: {import_s:.2f} s ({rows / import_s:,.0f} rows/s); bare bulk INSERT {bulk_s:.2f} s; "
        f"ratio {import_s / bulk_s:.2f}"
    )

    # 2. A run vs the same generations with no database.
    prompt = services.prompt_create(owner=user, title="echo")
    pv = services.version_create(prompt=prompt, author=user, body="{{q}}", model_name=MODEL, max_tokens=32)
    # The in-process worker, as the process's backend: the run's cells reach it
    # through the gateway's batch lane (admission and the cache too, with REDIS_URL).
    settings.INFERENCE_BACKEND = "inference_worker.inprocess.InProcessBackend"
    get_backend.cache_clear()
    backend = get_backend()
    raw_requests = [
        GenerationRequest(
            request_id=uuid.uuid4().hex,
            model=MODEL,
            max_tokens=32,
            priority="batch",
            messages=[{"role": "user", "content": f"question {i}"}],
        )
        for i in range(rows)
    ]
    backend.result(_submit(backend, raw_requests[:1])[0], timeout_s=30)  # load the engine
    start = time.perf_counter()
    for offset in range(0, rows, 64):
        ids = _submit(backend, raw_requests[offset : offset + 64])
        for rid in ids:
            backend.result(rid, timeout_s=60)
    raw_s = time.perf_counter() - start
    response = client.post(
        "/api/evals/runs",
        {
            "dataset": dataset["id"],
            "dataset_version": version_id,
            "evaluators": ["exact"],
            "columns": [{"prompt": str(prompt.pk), "version": str(pv.pk)}],
        },
        format="json",
    )
    run_id = response.json()["id"]
    start = time.perf_counter()
    status = evalrun_drive(run_id)
    run_s = time.perf_counter() - start
    run = EvalRun.objects.get(pk=run_id)
    assert status == "done" and run.completed == rows, (status, run.completed)
    mean = run.summary["columns"][0]["scores"]["exact"]["mean"]
    print(
        f"run: {run_s:.2f} s ({rows / run_s:,.0f} cells/s, exact mean {mean:.2f}); same generations "
        f"without the database {raw_s:.2f} s; ratio {run_s / raw_s:.2f} "
        f"({(run_s - raw_s) / rows * 1000:.3f} ms overhead per cell)"
    )

    # 3. Opening the run as the page does.
    def open_run():
        assert client.get(f"/api/evals/runs/{run_id}").status_code == 200
        assert len(client.get(f"/api/evals/runs/{run_id}/results?limit=100").json()["rows"]) == 100

    trivial = timed(lambda: client.get("/api/evals/evaluators"))
    opened = timed(open_run)
    last_page = timed(lambda: client.get(f"/api/evals/runs/{run_id}/results?start={rows - 100}&limit=100"))
    summary = timed(lambda: run_summary(run), repeat=3)
    print(
        f"open a {rows}-row run (run + first 100 grid rows): {opened * 1000:.0f} ms; last page "
        f"{last_page * 1000:.0f} ms; a trivial API call {trivial * 1000:.1f} ms; ratio {opened / trivial:.1f}"
    )
    print(f"summary with bootstrap intervals over {rows} cells: {summary * 1000:.0f} ms")


def _submit(backend, requests):
    for request in requests:
        backend.submit(request)
    return [r.request_id for r in requests]


if __name__ == "__main__":
    main()
