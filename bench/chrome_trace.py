"""A Chrome trace's renderer main thread in a few lines (bench/playground_page.py --profile)."""

from __future__ import annotations

import json
from pathlib import Path

TRACED = ["devtools.timeline", "disabled-by-default-devtools.timeline", "blink", "loading", "v8", "toplevel",
          "navigation"]
MILESTONES = {"ParseHTML", "v8.evaluateModule", "Document::FinishedParsing", "Layout", "Paint",
              "FunctionCall", "ProxyMain::BeginMainFrame",
              "RenderFrameImpl::DidDispatchDOMContentLoadedEvent"}


def main_thread(path: Path) -> tuple[list[dict], list[dict]]:
    """The trace's events, and the complete ("X") events of the renderer's main thread."""
    events = json.loads(path.read_text())
    events = events.get("traceEvents", events)
    main = {(e["pid"], e["tid"]) for e in events if e.get("name") == "thread_name"
            and e.get("args", {}).get("name") == "CrRendererMain"}
    return events, [e for e in events if (e.get("pid"), e.get("tid")) in main and e.get("ph") == "X"]


def top_events(path: Path) -> None:
    """The renderer main thread's busy time and its events by self time (less their children)."""
    spans = sorted((e["ts"], -e["dur"], e["name"]) for e in main_thread(path)[1] if e.get("dur"))
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


def timeline(path: Path, min_ms: float = 2.0) -> None:
    """The main thread's milestones (over min_ms) in time order, ms from the last navigation start."""
    events, main = main_thread(path)
    starts = sorted(e["ts"] for e in events if e.get("name") == "NavigationTiming navigationStart")
    if not starts:
        return
    print("   main thread from navigation start (at ms, took ms, event):")
    for e in sorted(main, key=lambda e: e["ts"]):
        if e["name"] in MILESTONES and e.get("dur", 0) >= min_ms * 1000 and e["ts"] >= starts[-1]:
            print(f"     {(e['ts'] - starts[-1]) / 1000:7.1f} {e['dur'] / 1000:6.1f}  {e['name']}")
