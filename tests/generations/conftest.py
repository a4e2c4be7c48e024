"""Generations as the usage writer stores them: `log` builds the (usage record,
log entry) pair the record stage queues and hands it to generations_store."""

import itertools
import time
import uuid

from generations.store import generations_store

_ids = itertools.count()


def log(version, user, **fields) -> str:
    """Store one generation of `version` called by `user`; its request id."""
    pair = entry(version, user, **fields)
    generations_store([pair])
    return pair[0]["request_id"]


def entry(version, user, *, label="", output="Hi Ada", variables=None, status="ok", model="fixed-cost",
          latency_ms=100, ttft_ms=20, checked=True, at=None, error_code="", completion_tokens=3
          ) -> tuple[dict, dict]:
    """The (usage record, log entry) pair of one generation, as the record stage queues it."""
    request_id = f"gen-test-{next(_ids)}-{uuid.uuid4().hex[:8]}"
    row = {"user_id": user.pk, "api_key_id": None, "request_id": request_id, "model": model, "version": "",
           "tier": "free", "prompt_tokens": 5, "completion_tokens": completion_tokens,
           "latency_ms": latency_ms,
           "ttft_ms": ttft_ms, "cache_hit": "", "status": status, "error_code": error_code, "end_user": "",
           "prompt_version": str(version.pk), "prompt_label": label, "eval_run": None}
    logged = {"source": "run" if checked else "v1", "checked": checked,
             "variables": {"name": "Ada"} if variables is None else variables,
             "messages": [{"role": "user", "content": "Hello Ada!"}], "params": {"temperature": 0.0},
             "output": output, "at": time.time() if at is None else at}
    return row, logged


def scrub(entry: dict) -> dict:
    """A GENERATIONS_REDACT hook for the tests: the name Ada never stored."""
    entry["variables"] = {k: str(v).replace("Ada", "<name>") for k, v in entry["variables"].items()}
    entry["messages"] = [{**m, "content": m["content"].replace("Ada", "<name>")} for m in entry["messages"]]
    entry["output"] = entry["output"].replace("Ada", "<name>")
    return entry
