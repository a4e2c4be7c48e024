"""SDK benchmark, run by hand against PostgreSQL and Redis (the variables
scripts/test.sh exports):

    .venv/bin/python bench/sdk.py [--quick]

It creates a throwaway database (<db>_sdkbench), starts uvicorn on it, and
prints, for get_prompt by label (one thread, sequential calls):
- no cache (ttl = max_stale = 0: every call asks the server): the baseline;
- fresh cache (within ttl): per-call time and the ratio to the baseline;
- stale serving (past ttl, a background refresh running): ratio;
- server down (a TCP proxy cut in front of it), stale copy within the bound:
  ratio, and a cold call that falls back (connection refused) for comparison.
Ratios are against the no-cache baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "sdk" / "python")]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def per_call(fn, n: int) -> tuple[float, float]:
    """(median, p99) seconds per call over n calls."""
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    out.sort()
    return statistics.median(out), out[min(len(out) - 1, int(0.99 * len(out)))]


def us(seconds: float) -> str:
    return f"{seconds * 1e6:9.1f} us"


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer calls")
    args = parser.parse_args()
    n_server, n_cache = (100, 10_000) if args.quick else (500, 100_000)

    import django
    from django.conf import settings

    django.setup()
    from django.db import connection

    db = settings.DATABASES["default"]
    if not db["ENGINE"].endswith("postgresql"):
        sys.exit("bench/sdk.py runs against PostgreSQL: set DATABASE_URL (see scripts/test.sh).")
    base_name = db["NAME"]
    db.setdefault("TEST", {})["NAME"] = f"{base_name}_sdkbench"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        from promptyard import Promptyard

        from playground import services
        from tests.factories import ApiKeyFactory, PromptFactory, UserFactory
        from tests.livesubprocess import free_port, running_server
        from tests.tcpproxy import TcpProxy

        user = UserFactory()
        _, raw = ApiKeyFactory.create_with_raw(user=user, tier="paid")
        prompt = PromptFactory(owner=user)
        version = services.version_create(prompt=prompt, author=user, body="Summarise {{text}}.\n" * 20,
                                          model_name="fixed-cost", variables={"text": None})
        services.label_move(prompt=prompt, name="production", version_id=version.pk,
                            expected_version_id=None, actor=user)
        d = connection.settings_dict
        url = f"postgres://{d['USER']}@{d['HOST']}:{d['PORT']}/{d['NAME']}"
        port = free_port()
        # Plain http on this machine, as the test servers (scripts/test.sh sets the same).
        env = dict(os.environ, DATABASE_URL=url, LOG_LEVEL="WARNING", SECURE_HTTPS="false")
        args_ = ["-m", "uvicorn", "config.asgi:application", "--port", str(port), "--lifespan", "off",
                 "--log-level", "warning"]
        with running_server(args_, env, port) as server:
            proxy = TcpProxy("127.0.0.1", port)
            base = f"http://127.0.0.1:{proxy.port}"
            print(f"server: uvicorn, 1 process, database {d['NAME']}; {os.cpu_count()} CPUs; "
                  f"calls: {n_server} to the server, {n_cache} from the cache")

            with Promptyard(base, raw, ttl=0, max_stale=0) as py:
                py.get_prompt(prompt.pk)
                baseline, baseline_p99 = per_call(lambda: py.get_prompt(prompt.pk), n_server)
            print(f"no cache (server each call) median {us(baseline)}  p99 {us(baseline_p99)}   1.00x")

            with Promptyard(base, raw, ttl=3600, max_stale=0) as py:
                py.get_prompt(prompt.pk)
                fresh, fresh_p99 = per_call(lambda: py.get_prompt(prompt.pk), n_cache)
            print(f"fresh cache                 median {us(fresh)}  p99 {us(fresh_p99)}   "
                  f"{baseline / fresh:,.0f}x faster")

            clock = [0.0]
            with Promptyard(base, raw, ttl=60, max_stale=10**9, clock=lambda: clock[0]) as py:
                py.get_prompt(prompt.pk)
                clock[0] = 61.0  # stale from now on; each refresh re-stamps at 61, so it stays stale

                def stale_get():
                    clock[0] += 61.0
                    assert py.get_prompt(prompt.pk).source in ("stale", "cache")

                stale, stale_p99 = per_call(stale_get, n_server)
            print(f"stale, refreshing behind    median {us(stale)}  p99 {us(stale_p99)}   "
                  f"{baseline / stale:,.0f}x faster")

            with Promptyard(base, raw, ttl=0, max_stale=3600, timeout=2) as py:
                py.get_prompt(prompt.pk)
                proxy.cut()
                down, down_p99 = per_call(lambda: py.get_prompt(prompt.pk), n_cache)
                with Promptyard(base, raw, timeout=2) as cold:
                    fb, fb_p99 = per_call(lambda: cold.get_prompt(prompt.pk, fallback="Summarise {{text}}."),
                                          n_server)
                proxy.restore()
            print(f"server down, stale copy     median {us(down)}  p99 {us(down_p99)}   "
                  f"{baseline / down:,.0f}x faster")
            print(f"server down, cold fallback  median {us(fb)}  p99 {us(fb_p99)}   "
                  f"{baseline / fb:.2f}x (connection refused, then the fallback)")
            proxy.close()
            assert server.proc.poll() is None
    finally:
        connection.creation.destroy_test_db(base_name, verbosity=0)


if __name__ == "__main__":
    main()
