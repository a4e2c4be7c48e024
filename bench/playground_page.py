"""The playground page in Chromium, as a user loads it (run by hand; prints
ratios, asserts nothing): issue #33's goals for the prompt engineer's workbench.

    .venv/bin/python bench/playground_page.py [--loads 10] [--ttft-runs 20] [--reseed] [--profile]
        [--checkout PATH]

Needs PostgreSQL (DATABASE_URL's server; the bench uses its own database,
promptyard_h5bench by default, migrated here) and Debian's /usr/bin/chromium.
The app runs as the browser tests run it (uvicorn, the in-process worker, no
Redis or broker); its model is an `upstream` one whose server is a fake that
streams one character per chunk, PER_TOKEN_S apart (bench/fake_upstream.py).

Seeded once (kept between runs; --reseed starts over): a prompt of 1,000
versions (a chain of edits through playground.services.version_create) and
10,000 history runs, and a baseline prompt of 1 version and 1 run. It prints:

1. time to interactive of /prompts/<id>/ (navigation start -> the later of the
   `playground:ready` mark, end of playground.js's start(), and the first paint of
   the runs table), p50/p95 over N warm-cache loads, big prompt over baseline, and
   each request's server time (resource timing: responseStart - requestStart);
2. the first token's display delay over ~20 runs: from the first chunk at fetch
   level and from the backend's TTFT (the run row's ttft_ms) to its first paint;
3. six Side-by-side columns streaming at once: frames over 50 ms, dropped frames,
   long animation frames, the main thread's busy share (CDP TaskDuration).

--checkout: a second server runs another git worktree's code, in its directory;
its loads alternate with this one's, and the report gives both and their ratio.

--profile writes a Chrome trace of one big-prompt load and of the six columns
(/tmp/playground-*.json) and prints the main thread's top events.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.livesubprocess import free_port, running_server  # noqa: E402

MODEL = "bench-stream"
PER_TOKEN_S, CALL_S = 0.02, 0.05  # 50 tokens/s per column, 50 ms to the first
UPSTREAM_PORT = free_port()
MODELS = json.dumps({MODEL: {"engine": "upstream", "base_url": f"http://127.0.0.1:{UPSTREAM_PORT}/v1",
                             "model": "fake", "max_batch_size": 16}})
DB = os.environ.get("BENCH_DATABASE", "promptyard_h5bench")
SERVER = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres").rsplit("/", 1)[0]
os.environ.update(DATABASE_URL=f"{SERVER}/{DB}", INFERENCE_MODELS=MODELS, DEFAULT_MODEL=MODEL,
                  REDIS_URL="", CELERY_BROKER_URL="", CELERY_RESULT_BACKEND="")
for key, value in {"DEBUG": "false", "SECRET_KEY": "bench-secret-key-not-for-production",
                   "SECURE_HTTPS": "false", "DJANGO_SETTINGS_MODULE": "config.settings"}.items():
    os.environ.setdefault(key, value)
for key in [k for k in os.environ if k.startswith("S3_")]:
    del os.environ[key]  # bodies inline; the local blob store if any
os.environ.setdefault("PROMPTYARD_VAR_DIR", tempfile.mkdtemp(prefix="playground-bench-"))

import psycopg  # noqa: E402

with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as admin:
    if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DB,)).fetchone():
        admin.execute(f'CREATE DATABASE "{DB}"')

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from playground import services  # noqa: E402
from playground.models import PlaygroundRun, Prompt, PromptVersion  # noqa: E402

USER, PASSWORD = "pagebench", "a-long-bench-password-42"
BIG, SMALL = "Page bench: 1,000 versions", "Page bench: baseline"
VERSIONS, RUNS = 1000, 10_000
BODY = "Summarise {{text}} for a busy reader.\n" + "".join(f"Rule {i}: keep it short.\n" for i in range(40))
LONG = "".join(f"word{i} " for i in range(60))[:300]  # ~300 characters: a 300-token answer per column
# Wait conditions are functions: the page's CSP refuses eval, which a string condition uses.
FINISHED = "() => [...document.querySelectorAll('.col-stats')].every((s) => s.textContent.includes('speed'))"
COLUMN_CHARS = "() => [...document.querySelectorAll('.compare-col pre')].map((p) => p.textContent.length)"
READY = "() => performance.getEntriesByName('playground:ready').length && __b.runsPaint"
TUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


# ---- seed ---------------------------------------------------------------------

def output(i: int) -> str:  # a run's answer: about 1.6 KB, every tenth about 22 KB
    return f"Answer {i}:\n" + "lorem ipsum dolor sit amet " * (800 if i % 10 == 0 else 60)


def seed_prompt(user, title: str, versions: int, runs: int) -> Prompt:
    prompt = services.prompt_create(owner=user, title=title, description="bench")
    parent = None
    for n in range(versions):  # a chain of edits: each version one line more than its parent
        body = BODY + "".join(f"Edit {i}.\n" for i in range(n))
        parent = services.version_create(
            prompt=prompt, author=user, parent_id=parent and parent.pk, body=body, system="You are terse.",
            variables={"text": None}, max_tokens=len(LONG), message=f"edit {n}")
    ids = list(PromptVersion.objects.filter(prompt=prompt).values_list("pk", flat=True))
    PlaygroundRun.objects.bulk_create([PlaygroundRun(
        prompt=prompt, user=user, version_id=ids[i % len(ids)], draft=None if i % 5 else {"body": "draft"},
        variables={"text": f"input {i}"}, params={"model": MODEL}, model=MODEL, status="ok",
        output=output(i), output_size=len(output(i)), prompt_tokens=60, completion_tokens=len(output(i)) // 4,
        latency_ms=900 + i % 300, ttft_ms=50 + i % 40, search_text=f"input {i}") for i in range(runs)],
        batch_size=2000)
    with connection.cursor() as cur:  # a run every 37 s back in time, as a history has
        cur.execute(f"""UPDATE {PlaygroundRun._meta.db_table} r SET created_at = now() - s.n * interval '37 s'
                        FROM (SELECT id, row_number() OVER (ORDER BY id) n FROM {PlaygroundRun._meta.db_table}
                              WHERE prompt_id = %s) s WHERE r.id = s.id""", [prompt.pk])
    return prompt


def seed(reseed: bool) -> tuple[str, str]:
    call_command("migrate", verbosity=0)
    user_model = get_user_model()
    user = user_model.objects.filter(username=USER).first()
    if user is None:
        user = user_model.objects.create_user(USER, password=PASSWORD)
    prompts = {p.title: p for p in Prompt.objects.filter(owner=user)}
    if reseed or len(prompts) != 2 or PlaygroundRun.objects.filter(prompt=prompts.get(BIG)).count() < RUNS:
        Prompt.objects.filter(owner=user).delete()
        print(f"seeding {VERSIONS} versions and {RUNS} runs (once; kept in {DB})...", flush=True)
        prompts = {BIG: seed_prompt(user, BIG, VERSIONS, RUNS), SMALL: seed_prompt(user, SMALL, 1, 1)}
    # Runs of earlier bench runs go: every run starts from the same history.
    PlaygroundRun.objects.filter(prompt__owner=user).exclude(search_text__startswith="input ").delete()
    return str(prompts[BIG].pk), str(prompts[SMALL].pk)


# ---- the browser's side -------------------------------------------------------

INIT = (Path(__file__).parent / "playground_page.js").read_text()  # before the page's scripts


def until(page, condition: str, every_s: float = 0.02, timeout_s: float = 60) -> None:
    """Poll a condition in the page (wait_for_function evaluates it by eval, which the page's CSP refuses)."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(condition):
        if time.monotonic() > deadline:
            raise TimeoutError(condition)
        time.sleep(every_s)


def sign_in(browser, base):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(INIT)
    context.set_default_timeout(60_000)
    page = context.new_page()
    page.goto(f"{base}/login/")
    page.fill("#id_username", USER)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"^(?!.*/login/)"))
    page.close()
    return context


def load_once(context, url: str) -> dict:
    """One load's milestones (ms from navigation start) and each request's server time."""
    page = context.new_page()
    page.goto(url)
    until(page, READY)
    timing = page.evaluate("""() => {
        const nav = performance.getEntriesByType('navigation')[0];
        const api = performance.getEntriesByType('resource').filter((r) => r.initiatorType === 'fetch');
        const at = (part) => api.find((r) => r.name.includes(part)) || {};
        return { ready: performance.getEntriesByName('playground:ready')[0].startTime, runs: __b.runsPaint,
          html: nav.responseEnd, dcl: nav.domContentLoadedEventEnd,
          // Static files that went to the server (revalidated or fetched) rather than the cache.
          static_sent: performance.getEntriesByType('resource')
            .filter((r) => r.name.includes('/static/') && r.transferSize > 0).length,
          runs_sent: at('/runs?').requestStart, runs_back: at('/runs?').responseEnd,
          server: [['page ' + nav.name, nav.responseStart - nav.requestStart],
                   ...api.map((r) => [r.name, r.responseStart - r.requestStart])] }; }""")
    page.close()
    timing["tti"] = max(timing["ready"], timing["runs"])
    return timing


def page_loads(targets: dict[str, tuple], n: int) -> dict:
    """N loads of each target (name: (context, page URL)), alternating: drift hits all alike."""
    for context, url in targets.values():
        load_once(context, url)  # warm-up: the static files into the cache
    results: dict[str, list] = {name: [] for name in targets}
    for _ in range(n):
        for name, (context, url) in targets.items():
            results[name].append(load_once(context, url))
    return results


# Runs asked/in: "-" where the page carries the runs' first page (since 2026-12-06).
MILESTONES = [("html", "page's HTML in"), ("dcl", "modules run (DOMContentLoaded)"), ("ready", "ready mark"),
              ("runs_sent", "runs asked"), ("runs_back", "runs in"), ("runs", "runs table painted")]


def report_loads(results: dict) -> None:
    names = list(results)
    print("\n== 1. time to interactive (navigation start -> editors writable and runs table painted), "
          f"{len(results['big'])} warm-cache loads each")
    tti = {k: [r["tti"] for r in v] for k, v in results.items()}
    for name, values in tti.items():
        print(f"   {name:>13}: p50 {pct(values, .5):6.0f} ms  p95 {pct(values, .95):6.0f} ms  "
              f"min {min(values):6.0f} ms")
    ratios = [("big", "small", "big / baseline")]
    if "big, variant" in tti:
        ratios += [("big, variant", "big", "variant / this checkout, big"),
                   ("small, variant", "small", "variant / this checkout, baseline")]
    for a, b, label in ratios:
        print(f"   {label}: p50 {pct(tti[a], .5) / pct(tti[b], .5):.2f}x, "
              f"p95 {pct(tti[a], .95) / pct(tti[b], .95):.2f}x")
    print(f"   goal: big < 300 ms. The path, p50 ms from navigation start ({' / '.join(names)}):")

    def milestone(name: str, key: str) -> str:
        seen = [r[key] for r in results[name] if r[key] is not None]  # None: a step this page skips
        return f"{statistics.median(seen):6.0f}" if seen else f"{'-':>6}"

    for key, label in MILESTONES:
        print("     " + " ".join(milestone(n, key) for n in names) + f"  {label}")
    print("   static files asked of the server per load (not from the cache): "
          + " / ".join(f"{statistics.mean(r['static_sent'] for r in results[n]):.1f}" for n in names))
    print(f"   server time per request (responseStart - requestStart), p50 ms ({' / '.join(names)}):")
    per: dict[str, dict[str, list[float]]] = {}
    for name in names:
        for r in results[name]:
            for url, ms in r["server"]:
                path = TUID.sub("<id>", re.sub(r"^(page )?https?://[^/]+", r"\1", url))
                per.setdefault(path, {n: [] for n in names})[name].append(ms)
    for path, each in sorted(per.items()):
        print("     " + " ".join(f"{statistics.median(each[n]):6.1f}" if each[n] else f"{'-':>6}"
                                 for n in names) + f"  {path}")


def first_tokens(context, base: str, pid: str, n: int) -> None:
    page = context.new_page()
    page.goto(f"{base}/prompts/{pid}/")
    until(page, READY)
    page.fill("[data-var=text]", "x")
    gaps_fetch, gaps_backend, ttfts, headers = [], [], [], []
    for i in range(n):
        page.fill("#body-input", f"run {i} " + "abcdefghij" * 2)
        page.evaluate("() => { __b.chunks.length = 0; }")
        page.click("#run-btn")
        until(page, "() => __b.chunks.length === 1 && __b.chunks[0].painted && __b.chunks[0].firstChunk")
        page.wait_for_selector("#stat-finish:has-text('finish')")
        e = page.evaluate("() => __b.chunks[0]")
        row = PlaygroundRun.objects.filter(prompt_id=pid, model=MODEL).order_by("-created_at").first()
        gaps_fetch.append(e["painted"] - e["firstChunk"])
        gaps_backend.append(e["painted"] - e["start"] - row.ttft_ms)
        ttfts.append(row.ttft_ms)
        headers.append(e["headers"] - e["start"])
    page.close()
    print(f"\n== 2. first token, {n} runs on the big prompt (backend TTFT p50 {pct(ttfts, .5):.0f} ms, "
          f"the engine's prefill {CALL_S * 1000:.0f} ms + one step {PER_TOKEN_S * 1000:.0f} ms)")
    print(f"   first chunk at fetch level -> painted: p50 {pct(gaps_fetch, .5):.1f} ms  "
          f"p95 {pct(gaps_fetch, .95):.1f} ms")
    print(f"   request start + backend TTFT -> painted: p50 {pct(gaps_backend, .5):.1f} ms  "
          f"p95 {pct(gaps_backend, .95):.1f} ms; goal: within 50 ms")
    print(f"   of which the answer's headers (the server's work before the completion starts, and the "
          f"connection): p50 {pct(headers, .5):.1f} ms  p95 {pct(headers, .95):.1f} ms")


def six_columns(context, base: str, pid: str, trace: Path | None) -> None:
    page = context.new_page()
    page.goto(f"{base}/prompts/{pid}/")
    until(page, READY)
    page.fill("#body-input", LONG)
    page.locator("#compare-panel").scroll_into_view_if_needed()
    for i in range(6):
        page.click("#compare-add")
        until(page, f"() => document.querySelectorAll('.compare-col').length === {i + 1}")
    cdp = context.new_cdp_session(page)
    cdp.send("Performance.enable")
    if trace:
        context.browser.start_tracing(page=page, path=str(trace), screenshots=False)
    page.evaluate("__frames()")
    before = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    page.click("#compare-run")
    until(page, FINISHED,
          every_s=0.25, timeout_s=120)
    after = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    b = page.evaluate("() => { __b.stop = true; return __b; }")
    if trace:
        context.browser.stop_tracing()
    chars = page.evaluate(COLUMN_CHARS)
    page.screenshot(path="/tmp/playground-bench-columns.png", full_page=True)
    page.close()
    wall = after["Timestamp"] - before["Timestamp"]
    busy = {k: after[k] - before[k] for k in ("TaskDuration", "ScriptDuration", "LayoutDuration",
                                                "RecalcStyleDuration")}
    frames = b["frames"][1:]
    dropped = sum(max(0, round(f / (1000 / 60)) - 1) for f in frames)
    print(f"\n== 3. six columns streaming at once ({chars} characters, {PER_TOKEN_S * 1000:.0f} ms per token "
          f"each: {6 / PER_TOKEN_S:.0f} tokens/s into the page), {wall:.1f} s")
    print(f"   frames: {len(frames)}, p50 {pct(frames, .5):.1f} ms, p99 {pct(frames, .99):.1f}, "
          f"max {max(frames):.1f}; longer than 50 ms: {sum(f > 50 for f in frames)}; "
          f"dropped (60 Hz): {dropped} of {len(frames) + dropped} ({dropped / (len(frames) + dropped):.1%})")
    print(f"   long animation frames: {len(b['loaf'])} (longest {max(b['loaf'], default=0):.0f} ms)")
    print(f"   main thread busy {busy['TaskDuration'] / wall:.1%} of the time "
          f"(script {busy['ScriptDuration'] / wall:.1%}, style {busy['RecalcStyleDuration'] / wall:.1%}, "
          f"layout {busy['LayoutDuration'] / wall:.1%})")
    if trace:
        top_events(trace)


def top_events(path: Path) -> None:
    """The renderer main thread's busy time and its events by self time (less their children)."""
    events = json.loads(path.read_text())
    events = events.get("traceEvents", events)
    main = {(e["pid"], e["tid"]) for e in events if e.get("name") == "thread_name"
            and e.get("args", {}).get("name") == "CrRendererMain"}
    spans = sorted((e["ts"], -e["dur"], e["name"]) for e in events
                   if (e.get("pid"), e.get("tid")) in main and e.get("ph") == "X" and e.get("dur"))
    selfs: dict[str, float] = {}
    stack: list[tuple[float, str]] = []  # (end, name) of the open spans
    busy = 0.0
    for ts, neg_dur, name in spans:
        while stack and stack[-1][0] <= ts:
            stack.pop()
        if stack:
            selfs[stack[-1][1]] -= -neg_dur
        else:
            busy += -neg_dur
        selfs[name] = selfs.get(name, 0.0) - neg_dur
        stack.append((ts - neg_dur, name))
    print(f"   trace {path}: main thread busy {busy / 1000:.0f} ms; top events by self time (ms):")
    for name, us in sorted(selfs.items(), key=lambda x: -x[1])[:10]:
        print(f"     {us / 1000:8.1f}  {name}")


def traced_load(context, url: str, trace: Path) -> None:
    page = context.new_page()
    context.browser.start_tracing(page=page, path=str(trace))
    page.goto(url)
    until(page, READY)
    context.browser.stop_tracing()
    page.close()
    top_events(trace)


def uvicorn(app: str, port: int) -> list[str]:
    return ["-m", "uvicorn", app, "--port", str(port), "--lifespan", "off", "--log-level", "warning"]


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser()
    parser.add_argument("--loads", type=int, default=10)
    parser.add_argument("--ttft-runs", type=int, default=20)
    parser.add_argument("--reseed", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--checkout", help="another git worktree whose page loads alternate with this one's")
    args = parser.parse_args()
    big, small = seed(args.reseed)
    print(f"Chromium (headless) and one uvicorn process on this machine ({os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f} before)")
    upstream_env = dict(os.environ, FAKE_UPSTREAM_CALL_S=str(CALL_S),
                        FAKE_UPSTREAM_PER_TOKEN_S=str(PER_TOKEN_S))
    with contextlib.ExitStack() as stack:
        stack.enter_context(running_server(uvicorn("bench.fake_upstream:app", UPSTREAM_PORT), upstream_env,
                                           UPSTREAM_PORT, ready_path="/v1/models"))
        bases = {}
        for label, checkout in [("", None), (", variant", args.checkout)][:1 + bool(args.checkout)]:
            port = free_port()
            # The other checkout's server runs there: its modules, templates and static files.
            cwd = {"cwd": Path(checkout).resolve()} if checkout else {}
            bases[label] = stack.enter_context(running_server(
                uvicorn("config.asgi:application", port), dict(os.environ), port, **cwd)).base
        p = stack.enter_context(sync_playwright())
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # ORM reads beside Playwright's loop
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"])
        contexts = {label: sign_in(browser, base) for label, base in bases.items()}
        report_loads(page_loads({f"{name}{label}": (contexts[label], f"{base}/prompts/{pid}/")
                                 for label, base in bases.items()
                                 for name, pid in (("big", big), ("small", small))}, args.loads))
        context, base = contexts[""], bases[""]
        if args.profile:
            traced_load(context, f"{base}/prompts/{big}/", Path("/tmp/playground-load.json"))
        first_tokens(context, base, big, args.ttft_runs)
        six_columns(context, base, big, Path("/tmp/playground-columns.json") if args.profile else None)
        browser.close()


if __name__ == "__main__":
    main()
