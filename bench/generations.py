"""The generations log, run by hand (prints figures, asserts nothing):

    .venv/bin/python bench/generations.py list [--rows 1000000]
    .venv/bin/python bench/generations.py gateway [--duration 10] [--levels 1,100] [--rounds 2]

`list` (PostgreSQL: set DATABASE_URL): a throwaway database (<db>_bench) with
--rows generations of one prompt (three versions, two labels, 2% errors, two
models, 30 days), then the list API's answer time (p50 / max of 7, through the
whole DRF view) for each filter, for 20 pages followed by their cursors, and the
version figures' (the metrics route) over 1, 7 and 30 days.

`gateway` (the services scripts/test.sh points at, and wrk, as bench/e2e.py):
the stack with GENERATIONS_ENABLED false, then true, alternating --rounds times,
every request a /v1 call of a saved version (X-Prompt-Version, X-Prompt-Label,
X-Prompt-Variables): req/s and p99 at each connection count, and how many
generations were stored.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

SEED = """
INSERT INTO generations_generation (request_id, prompt_id, version_id, label, user_id, api_key_id, source,
    model, status, error_code, cache_hit, variables, messages, messages_blob, params, output, output_size,
    output_blob, prompt_tokens, completion_tokens, latency_ms, ttft_ms, cost, search_text, created_at)
SELECT 'bench-' || g, %(prompt)s,
    CASE WHEN g %% 10 < 8 THEN %(v3)s::uuid WHEN g %% 10 = 8 THEN %(v2)s::uuid ELSE %(v1)s::uuid END,
    CASE WHEN g %% 3 = 0 THEN 'staging' ELSE 'production' END, %(user)s, NULL, 'v1',
    CASE WHEN g %% 100 = 0 THEN 'model-b' ELSE 'model-a' END,
    CASE WHEN g %% 50 = 0 THEN 'error' ELSE 'ok' END,
    CASE WHEN g %% 50 = 0 THEN 'engine_error' ELSE '' END, '',
    jsonb_build_object('name', 'user ' || g, 'topic', md5(g::text)),
    jsonb_build_array(jsonb_build_object('role', 'user', 'content', 'Hello user ' || g)), '', '{}'::jsonb,
    'Answer ' || md5((g * 7)::text), 39, '', 12, 20 + g %% 40, 100 + g %% 400, 20 + g %% 50, NULL,
    lower('user ' || g || ' ' || md5(g::text) || E'\\n' || 'answer ' || md5((g * 7)::text)),
    now() - (%(rows)s - g) * (interval '30 days' / %(rows)s)
FROM generate_series(1, %(rows)s) AS g
"""


def _times(client, path: str, params: dict, repeat: int = 7, key: str = "results"
           ) -> tuple[float, float, int]:
    out, count = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        response = client.get(path, params)
        out.append(time.perf_counter() - start)
        assert response.status_code == 200, (response.status_code, response.content, response.headers)
        count = len(response.json().get(key) or [])
    return statistics.median(out) * 1000, max(out) * 1000, count


def bench_list(rows: int) -> None:
    import django
    from django.conf import settings

    django.setup()
    from django.db import connection

    db = settings.DATABASES["default"]
    if not db["ENGINE"].endswith("postgresql"):
        sys.exit("`list` runs against PostgreSQL: set DATABASE_URL.")
    db.setdefault("TEST", {})["NAME"] = f"{db['NAME']}_bench"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        from rest_framework.test import APIClient

        from tests.factories import PromptFactory, PromptVersionFactory, UserFactory

        user = UserFactory()
        prompt = PromptFactory(owner=user)
        v1 = PromptVersionFactory(prompt=prompt)
        v2 = PromptVersionFactory(prompt=prompt, parent=v1)
        v3 = PromptVersionFactory(prompt=prompt, parent=v2)
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute(SEED, {"prompt": str(prompt.pk), "v1": str(v1.pk), "v2": str(v2.pk),
                                  "v3": str(v3.pk), "user": user.pk, "rows": rows})
            cursor.execute("ANALYZE generations_generation")
        print(f"seeded {rows:,} generations in {time.perf_counter() - started:.0f} s")
        client = APIClient()
        client.force_login(user)
        path = f"/api/prompts/{prompt.pk}/generations"
        print(f"{'filter':<44} {'p50 ms':>8} {'max ms':>8} {'rows':>5}")
        cases = {
            "none (the prompt, newest first)": {},
            "version (80% of rows)": {"version": v3.pk},
            "version (10% of rows)": {"version": v1.pk},
            "version + label staging + status error": {"version": v3.pk, "label": "staging",
                                                       "status": "error"},
            "model (1% of rows)": {"model": "model-b"},
            "since 1 day ago": {"since": _ago(1)},
            "until 29 days ago (the oldest rows)": {"until": _ago(29)},
            "q: a common word ('answer')": {"q": "answer"},
            "q: one row's variable ('user 123457 ')": {"q": "user 123457 "},
            "q: nothing matches ('zzzzzz')": {"q": "zzzzzz"},
            "version + q + since 7 days": {"version": v3.pk, "q": "ab", "since": _ago(7)},
            "status cancelled (no row)": {"status": "cancelled"},
            "model no row has": {"model": "model-z"},
            "label no row has": {"label": "canary"},
        }
        for name, params in cases.items():
            p50, worst, count = _times(client, path, {**params, "page_size": 50})
            print(f"{name:<44} {p50:>8.1f} {worst:>8.1f} {count:>5}")
        page_times, url = [], f"{path}?version={v3.pk}&page_size=50"
        for _ in range(20):
            start = time.perf_counter()
            body = client.get(url).json()
            page_times.append((time.perf_counter() - start) * 1000)
            url = body["next"]
        print(f"{'20 pages by cursor (version 80%)':<44} {statistics.median(page_times):>8.1f} "
              f"{max(page_times):>8.1f} {50:>5}")
        figures = f"/api/prompts/{prompt.pk}/versions/{v3.pk}/generation-metrics"
        for days in (1, 7, 30):
            p50, worst, _ = _times(client, figures, {"days": days}, repeat=3, key="buckets")
            print(f"{f'figures of the version (80%), {days} day(s)':<44} {p50:>8.1f} {worst:>8.1f}")
    finally:
        connection.creation.destroy_test_db(db["NAME"].removesuffix("_bench"), verbosity=0)


def _ago(days: int) -> str:
    import datetime

    return (datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=days)).isoformat()


def bench_gateway(duration: float, levels: list[int], rounds: int) -> None:
    import json

    from bench import e2e  # starts Django with the bench model (bench/e2e.py)
    from generations.models import Generation
    from playground import services as playground_services
    from tests.factories import ApiKeyFactory, PromptFactory, PromptVersionFactory, UserFactory

    user = UserFactory(username=f"bench-gen-{os.getpid()}")
    _, key = ApiKeyFactory.create_with_raw(user=user, tier="paid")
    prompt = PromptFactory(owner=user)
    version = PromptVersionFactory(prompt=prompt, model_name=e2e.MODEL)
    playground_services.label_move(prompt=prompt, name="production", version_id=version.pk,
                                   expected_version_id=None, actor=user)
    variables = json.dumps({"name": "Ada"}).replace('"', '\\"')
    e2e.WRK_LUA = e2e.WRK_LUA.replace(
        '{["Authorization"] = "Bearer " .. key}',
        f'{{["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json", '
        f'["X-Prompt-Version"] = "{version.pk}", ["X-Prompt-Label"] = "production", '
        f'["X-Prompt-Variables"] = "{variables}"}}')
    limit = e2e.MAX_INPUTS / e2e.CALL_S
    print(f"one device: {limit:.0f} req/s ({e2e.MAX_INPUTS} inputs / {e2e.CALL_S * 1000:.0f} ms per "
          f"call); {duration:.0f} s per level")
    print(f"{'logging':>8} {'conns':>6} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'non-200':>8} "
          f"{'logged':>8}")
    for _ in range(rounds):
        for enabled in ("false", "true"):
            env = dict(os.environ, **e2e.STACK_ENV, GENERATIONS_ENABLED=enabled)
            with e2e.Stack(1, 1, env) as stack:
                e2e.wrk(stack.base, [key], 50, 2, stack=stack)  # warm up
                for conns in levels:
                    e2e.settle()
                    before = Generation.objects.filter(version_id=version.pk).count()
                    r = e2e.wrk(stack.base, [key], conns, duration, stack=stack)
                    time.sleep(2)  # the writer's last batch
                    logged = Generation.objects.filter(version_id=version.pk).count() - before
                    refused = {s: c for s, c in r["statuses"].items() if s != "200"}
                    print(f"{'on' if enabled == 'true' else 'off':>8} {conns:>6} {r['rps']:>8.1f} "
                          f"{r['p50_us'] / 1000:>8.1f} {r['p99_us'] / 1000:>8.1f} {r['non200']:>8} "
                          f"{logged:>8}" + (f"  by status {refused}" if refused else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["list", "gateway"])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--levels", default="1,100")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if args.what == "list":
        bench_list(args.rows)
    else:
        bench_gateway(args.duration, [int(x) for x in args.levels.split(",")], args.rounds)


if __name__ == "__main__":
    main()
