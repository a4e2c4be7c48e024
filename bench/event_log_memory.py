"""What a generation leaves in Redis: its event log and result, per request,
while it runs, once it has finished, and once its log has expired.

    REDIS_URL=redis://127.0.0.1:6379/5 DJANGO_SETTINGS_MODULE=config.settings \\
        .venv/bin/python bench/event_log_memory.py [--requests 2000] [--tokens 20]

Each request is written as a worker writes it (inference_protocol.events.
RedisEventLog): --tokens token events of 4 characters, then its done event.
Printed: MEMORY USAGE of each request's keys (mean bytes) and what a day at
1,000 req/s keeps by them: before, the log stayed as long as the result (a day);
now FINISHED_LOG_TTL_S after the result. Redis's used_memory growth per request
is a cross-check (it counts every database: run it on a quiet Redis). The
database in REDIS_URL is flushed first: give the bench its own.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from inference_protocol.events import FINISHED_LOG_TTL_S, RedisEventLog  # noqa: E402

DAY_AT_1000 = 86_400 * 1000


def _mean_usage(log: RedisEventLog, keys: list[str]) -> float:
    pipe = log.redis.pipeline(transaction=False)
    for key in keys:
        pipe.memory_usage(key, samples=0)
    return sum(size or 0 for size in pipe.execute()) / len(keys)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--tokens", type=int, default=20)
    args = parser.parse_args()
    log = RedisEventLog()
    log.redis.flushdb()
    base = log.redis.info("memory")["used_memory"]
    ids = [uuid.uuid4().hex for _ in range(args.requests)]
    for rid in ids:
        for step in range(args.tokens):
            log.append(rid, {"type": "token", "attempt": 1, "offset": 4 * step, "text": "abcd"})
    text = "abcd" * args.tokens
    finishes = [log.finish_async(rid, {"type": "done", "result": {
        "text": text, "finish_reason": "stop", "prompt_tokens": 12, "completion_tokens": args.tokens,
        "queued_s": 0.01, "latency_s": 0.2, "first_token_s": 0.02, "served": "fixed-cost"}}) for rid in ids]
    assert all(f.result(timeout=60) for f in finishes)  # the writer's FIFO: the tokens are in too
    streams = [f"gen:{rid}:events" for rid in ids]
    results = [f"gen:{rid}:result" for rid in ids]
    finished = (log.redis.info("memory")["used_memory"] - base) / len(ids)
    log_bytes, result_bytes = _mean_usage(log, streams), _mean_usage(log, results)
    ttl = log.redis.ttl(streams[0])
    log.redis.delete(*streams)  # what their expiry does FINISHED_LOG_TTL_S later
    expired = (log.redis.info("memory")["used_memory"] - base) / len(ids)
    print(f"{args.requests} requests of {args.tokens} tokens")
    print(f"MEMORY USAGE per request: log {log_bytes:,.0f} B, result {result_bytes:,.0f} B; "
          f"the finished log's TTL {ttl} s (FINISHED_LOG_TTL_S {FINISHED_LOG_TTL_S})")
    print(f"used_memory per request: finished {finished:,.0f} B, after its log expired {expired:,.0f} B "
          f"({finished / max(expired, 1):.1f}x less)")
    before = (log_bytes + result_bytes) * DAY_AT_1000 / 1e9
    now = (result_bytes * DAY_AT_1000 + log_bytes * 1000 * FINISHED_LOG_TTL_S) / 1e9
    print(f"a day at 1,000 req/s: {before:,.0f} GB with the log kept a day, {now:,.1f} GB now")
    log.redis.flushdb()


if __name__ == "__main__":
    main()
