"""A GPU worker that sizes itself against hand-picked pool flags (run by hand;
prints ratios, asserts nothing)

    .venv/bin/python bench/sizing.py [--duration 10] [--connections 200]

Same services and stack as bench/e2e.py (one `serve`, one worker on the
fixed-cost engine: 50 inputs / 200 ms per call, a limit of 250 req/s) under wrk
at C connections, once per worker command line: no pool flags (the worker sizes
its pool from its engine, inference_worker/sizing.py), then each of the flags
that the docs used to prescribe. Each prints its req/s as a share of the device
limit, p99 over the call time, and CPU milliseconds per request by process (so a
share under 1 can be told apart from a CPU-bound run on a shared machine).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e  # noqa: E402  (sets up Django)

HAND_PICKED = ["-P threads -c 64", "-P threads -c 256"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--flags", nargs="*", default=HAND_PICKED, help="the command lines to compare")
    args = parser.parse_args()
    limit = e2e.MAX_INPUTS / e2e.CALL_S
    print(f"1 serve x 1 device, limit {limit:.0f} req/s, {args.connections} connections, "
          f"{args.duration:.0f} s each; {os.cpu_count()} cores shared by wrk and the whole stack; "
          f"load average before: {os.getloadavg()[0]:.1f}")
    print(f"{'worker flags':>24} {'req/s':>8} {'share':>6} {'p99/call':>9} {'non-200':>8}"
          "   CPU ms per request by process")
    for flags in ["", *args.flags]:
        e2e.WORKER_FLAGS = flags.split()
        with e2e.Stack(1, 1, dict(os.environ, **e2e.STACK_ENV)) as stack:
            key = e2e.make_keys("paid", 1)
            e2e.wrk(stack.base, key, args.connections, 3, stack=stack)  # warm up every pool thread
            e2e.settle()
            r = e2e.wrk(stack.base, key, args.connections, args.duration, stack=stack)
        print(f"{flags or '(none: self-sized)':>24} {r['rps']:>8.1f} {r['rps'] / limit:>6.2f} "
              f"{r['p99_us'] / 1e6 / e2e.CALL_S:>9.2f} {r['non200']:>8}   {e2e.cpu_line(r)}")


if __name__ == "__main__":
    main()
