"""The playground page in Chromium, as a user loads it (run by hand; prints
ratios, asserts nothing): issue #33's goals for the prompt engineer's workbench.

    .venv/bin/python bench/playground_page.py [--loads 10] [--ttft-runs 20] [--reseed] [--profile]
        [--new-tab] [--checkout PATH]

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
   each request's server time (resource timing: responseStart - requestStart).
   A load is a click on the prompt's card in the prompt list, in the same tab, as
   users open a prompt; --new-tab opens each in a new tab instead (Chromium starts
   a renderer process for it) and prints that floor: a new tab's first paint of /healthz;
2. the first token's display delay over ~20 runs: from the first chunk at fetch
   level and from the backend's TTFT (the run row's ttft_ms, counted from the
   completion's start: after the request's start, before the answer's headers,
   so the delay is given between those two bounds) to its first paint;
3. six Side-by-side columns streaming at once: frames over 50 ms, dropped frames,
   long animation frames, the main thread's busy share (CDP TaskDuration).

--checkout: a second server runs another git worktree's code, in its directory;
its loads alternate with this one's, and the report gives both and their ratio.

--profile writes a Chrome trace of one big-prompt load and of the six columns
(/tmp/playground-*.json) and prints the main thread's top events (and the load's
milestones in time order: bench/chrome_trace.py).
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
from bench.chrome_trace import TRACED, timeline, top_events  # noqa: E402
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

from bench.playground_seed import LONG, PASSWORD, USER, seed  # noqa: E402
from playground.models import PlaygroundRun  # noqa: E402

# Wait conditions are functions: the page's CSP refuses eval, which a string condition uses.
FINISHED = "() => [...document.querySelectorAll('.col-stats')].every((s) => s.textContent.includes('speed'))"
COLUMN_CHARS = "() => [...document.querySelectorAll('.compare-col pre')].map((p) => p.textContent.length)"
READY = "() => performance.getEntriesByName('playground:ready').length && __b.runsPaint"
TUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


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


def load_once(context, url: str, tab=None) -> dict:
    """One load's milestones (ms from navigation start) and each request's server time: in `tab`, a
    click on the prompt's card in the prompt list (as users open it), else in a new tab."""
    page = tab or context.new_page()
    if tab:
        page.goto(url.split("/prompts/")[0] + "/prompts/?q=Page+bench")
        page.click(f"a[href='{url[url.index('/prompts/'):]}']")
        page.wait_for_url(url, wait_until="commit")
    else:
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
    if not tab:
        page.close()
    timing["tti"] = max(timing["ready"], timing["runs"])
    return timing


def page_loads(targets: dict[str, tuple], n: int, new_tab: bool) -> dict:
    """N loads of each target (name: (context, page URL)), alternating: drift hits all alike."""
    tabs = {name: None if new_tab else context.new_page() for name, (context, _) in targets.items()}
    for name, (context, url) in targets.items():
        load_once(context, url, tabs[name])  # warm-up: the static files into the cache
    results: dict[str, list] = {name: [] for name in targets}
    for _ in range(n):
        for name, (context, url) in targets.items():
            results[name].append(load_once(context, url, tabs[name]))
    return results


def new_tab_floor(context, base: str, n: int) -> None:
    """Chromium's own cost of a new tab here: the first paint of a 20-byte answer (/healthz)."""
    paints = []
    for _ in range(n + 1):
        page = context.new_page()
        page.goto(f"{base}/healthz")
        until(page, "() => performance.getEntriesByType('paint').length")
        paints.append(page.evaluate("() => performance.getEntriesByType('paint')[0].startTime"))
        page.close()
    print(f"   a new tab's floor on this machine (first paint of /healthz's 20 bytes): "
          f"p50 {pct(paints[1:], .5):.0f} ms, p95 {pct(paints[1:], .95):.0f}")


# Runs asked/in: "-" where the page carries the runs' first page (since 2026-12-06).
MILESTONES = [("html", "page's HTML in"), ("dcl", "modules run (DOMContentLoaded)"), ("ready", "ready mark"),
              ("runs_sent", "runs asked"), ("runs_back", "runs in"), ("runs", "runs table painted")]


def report_loads(results: dict, how: str) -> None:
    names = list(results)
    print("\n== 1. time to interactive (navigation start -> editors writable and runs table painted), "
          f"{len(results['big'])} warm-cache loads each, {how}")
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
    gaps_fetch, gaps_backend, gaps_after, ttfts, headers = [], [], [], [], []
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
        gaps_after.append(e["painted"] - e["headers"] - row.ttft_ms)
        ttfts.append(row.ttft_ms)
        headers.append(e["headers"] - e["start"])
    page.close()
    print(f"\n== 2. first token, {n} runs on the big prompt (backend TTFT p50 {pct(ttfts, .5):.0f} ms, "
          f"the engine's prefill {CALL_S * 1000:.0f} ms + one step {PER_TOKEN_S * 1000:.0f} ms)")
    print(f"   first chunk at fetch level -> painted: p50 {pct(gaps_fetch, .5):.1f} ms  "
          f"p95 {pct(gaps_fetch, .95):.1f} ms")
    # The backend's TTFT counts from its completion's start, which lies between the request's
    # start and the answer's headers (sent after it): the delay after the first token lies between.
    most, least = (f"p50 {pct(g, .5):.1f} ms  p95 {pct(g, .95):.1f}" for g in (gaps_backend, gaps_after))
    print(f"   backend's first token -> painted, at most (request start + TTFT): {most}; "
          f"at least (headers in + TTFT): {least}; goal: within 50 ms")
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


def traced_load(context, url: str, trace: Path, new_tab: bool) -> None:
    page = context.new_page()
    if not new_tab:
        load_once(context, url, page)  # the tab's renderer, warm
    context.browser.start_tracing(page=page, path=str(trace), categories=TRACED)
    if new_tab:
        page.goto(url)
        until(page, READY)
    else:
        load_once(context, url, page)
    context.browser.stop_tracing()
    page.close()
    top_events(trace)
    timeline(trace)


def uvicorn(app: str, port: int) -> list[str]:
    return ["-m", "uvicorn", app, "--port", str(port), "--lifespan", "off", "--log-level", "warning"]


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser()
    parser.add_argument("--loads", type=int, default=10)
    parser.add_argument("--ttft-runs", type=int, default=20)
    parser.add_argument("--reseed", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--new-tab", action="store_true", help="each load in a new tab (a renderer process)")
    parser.add_argument("--checkout", help="another git worktree whose page loads alternate with this one's")
    args = parser.parse_args()
    big, small = seed(args.reseed, model=MODEL, database=DB)
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
        targets = {f"{name}{label}": (contexts[label], f"{base}/prompts/{pid}/")
                   for label, base in bases.items() for name, pid in (("big", big), ("small", small))}
        report_loads(page_loads(targets, args.loads, args.new_tab),
                     "in a new tab each" if args.new_tab else "clicked in the prompt list, in the same tab")
        if args.new_tab:
            new_tab_floor(contexts[""], bases[""], args.loads)
        context, base = contexts[""], bases[""]
        if args.profile:
            traced_load(context, f"{base}/prompts/{big}/", Path("/tmp/playground-load.json"), args.new_tab)
        first_tokens(context, base, big, args.ttft_runs)
        six_columns(context, base, big, Path("/tmp/playground-columns.json") if args.profile else None)
        browser.close()


if __name__ == "__main__":
    main()
