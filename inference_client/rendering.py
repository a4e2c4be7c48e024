"""OpenAI's response shapes: chat.completion objects and chat.completion.chunk SSE."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from core.errors import error_body
from inference_client.completion import Completion, spawn

# Terminal error codes of a generation -> (HTTP status, the param to name).
ERROR_STATUS = {
    "model_not_found": (404, "model"), "context_length_exceeded": (400, "messages"),
    "max_tokens_exceeded": (400, "max_tokens"), "request_too_large": (400, "max_tokens"),
    "empty_input": (400, "messages"), "invalid_max_tokens": (400, "max_tokens"),
    "invalid_temperature": (400, "temperature"), "invalid_top_p": (400, "top_p"),
    "invalid_stop": (400, "stop"), "queue_full": (429, None), "deadline_exceeded": (504, None),
    "timeout": (504, None), "cancelled": (499, None), "scheduler_stopped": (503, None),
    "rate_limit_exceeded": (429, None), "events_unavailable": (503, None),
}


def error_status(event: dict) -> tuple[int, dict]:
    status, param = ERROR_STATUS.get(event.get("code"), (502, None))
    return status, error_body(event.get("code") or "engine_error",
                              event.get("message") or "generation failed", status, param)


def usage(result: dict) -> dict:
    return {"prompt_tokens": result["prompt_tokens"], "completion_tokens": result["completion_tokens"],
            "total_tokens": result["prompt_tokens"] + result["completion_tokens"]}


def completion_body(c: Completion, result: dict) -> dict:
    return {
        "id": c.id, "object": "chat.completion", "created": c.created, "model": c.model,
        "system_fingerprint": None,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": result["text"], "refusal": None},
                     "logprobs": None, "finish_reason": result["finish_reason"]}],
        "usage": usage(result),
    }


def _chunk(c: Completion, delta: dict, finish_reason: str | None = None, **extra) -> bytes:
    body = {"id": c.id, "object": "chat.completion.chunk", "created": c.created, "model": c.model,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
            **extra}
    if c.include_usage and "usage" not in extra:
        body["usage"] = None
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


async def sse(c: Completion) -> AsyncIterator[bytes]:
    """Server-sent events: a role chunk, content chunks, a finish chunk, an
    optional usage chunk, then `data: [DONE]`. A generation error after the
    headers went out is an `error` event (the SDKs raise it)."""
    try:
        yield _chunk(c, {"role": "assistant", "content": ""})
        async for event in c.events():
            if event["type"] == "token":
                yield _chunk(c, {"content": event["text"]})
            elif event["type"] == "done":
                result = event["result"]
                yield _chunk(c, {}, result["finish_reason"])
                if c.include_usage:
                    body = {"id": c.id, "object": "chat.completion.chunk", "created": c.created,
                            "model": c.model, "choices": [], "usage": usage(result)}
                    yield b"data: " + json.dumps(body).encode() + b"\n\n"
            else:
                _, body = error_status(event)
                yield b"data: " + json.dumps(body).encode() + b"\n\n"
        yield b"data: [DONE]\n\n"
    except BaseException:  # GeneratorExit / CancelledError: the client went away
        spawn(c.client_gone())  # not awaited: this task is being torn down
        raise
