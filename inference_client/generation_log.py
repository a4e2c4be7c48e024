"""What the record stage logs of a run of a saved prompt version (generations/).

The log entry rides in the request's usage record, through the same stream and
the same batch writer (inference_client.usage): logging adds no round trip and
no write on the request's path. Runs are logged at GENERATIONS_SAMPLE_RATE; while
this process's writer is behind (its last batch was full) only
GENERATIONS_BACKLOG_SAMPLE_RATE of them, and the rest are counted, never waited for.
"""

from __future__ import annotations

import random
import time

from django.conf import settings

from inference_client import metrics as m
from inference_client.stages.call import Call

_state = {"behind": False}


def set_behind(behind: bool) -> None:
    """The usage writer's word: its last batch was full (records wait in the stream)."""
    _state["behind"] = behind


def _kept() -> bool:
    if random.random() >= settings.GENERATIONS_SAMPLE_RATE:
        m.GENERATIONS_DROPPED.labels("sampled").inc()
        return False
    if _state["behind"] and random.random() >= settings.GENERATIONS_BACKLOG_SAMPLE_RATE:
        m.GENERATIONS_DROPPED.labels("backlog").inc()
        return False
    return True


def _output(result: dict | None) -> str:
    if result is None:
        return ""
    if "choices" in result:  # n > 1: the choices one after another
        return "\n\n".join(str(ch.get("text", "")) for ch in result["choices"])
    return str(result.get("text", ""))


def entry(call: Call, result: dict | None) -> dict | None:
    """The log entry of a run of a saved version (None: not logged). Runs of the
    playground page have their own history (playground.runs); batch-lane calls
    (evaluations, the Batch API) store their own results."""
    ref = call.prompt_ref
    if (not settings.GENERATIONS_ENABLED or not ref.get("version") or call.record_sink is not None
            or ref.get("source") == "playground" or call.kind != "chat" or not _kept()):
        return None
    params = call.params.fingerprint()
    if call.params.user:
        params["user"] = call.params.user
    output = _output(result)
    return {"source": ref.get("source", "v1"), "checked": bool(ref.get("checked")),
            "variables": ref.get("variables") or {}, "messages": call.messages, "params": params,
            "output": output[:settings.GENERATIONS_OUTPUT_MAX_CHARS], "output_size": len(output),
            "at": time.time()}
