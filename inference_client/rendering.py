"""OpenAI's response shapes: chat.completion objects and chat.completion.chunk SSE."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import numpy as np

from core.error_codes import CODES
from core.errors import error_body
from inference_client.completion import Completion, spawn
from inference_protocol import tools

# The param a terminal error of a generation names; its status is the code's
# (core.error_codes), 502 for a code the registry lacks (a newer worker's).
ERROR_PARAM = {
    "model_not_found": "model", "context_length_exceeded": "messages", "max_tokens_exceeded": "max_tokens",
    "too_many_tokens": "max_tokens", "empty_input": "messages",
}


def error_status(event: dict) -> tuple[int, dict]:
    code = event.get("code") or "engine_error"
    entry = CODES.get(code)
    status = entry.status if entry else 502
    message = event.get("message") or "generation failed"
    return status, error_body(code, message, status, ERROR_PARAM.get(code))


def usage(result: dict) -> dict:
    return {"prompt_tokens": result["prompt_tokens"], "completion_tokens": result["completion_tokens"],
            "total_tokens": result["prompt_tokens"] + result["completion_tokens"]}


def choices_of(result: dict) -> list[dict]:
    """Every choice of a result (``choices`` when n > 1, else the one text)."""
    if "choices" in result:
        return result["choices"]
    one = {"index": 0, "text": result["text"], "finish_reason": result["finish_reason"]}
    if "logprobs" in result:
        one["logprobs"] = result["logprobs"]
    return [one]


def legacy_logprobs(entries: list[dict], offset: int = 0) -> dict:
    """/v1/completions' logprobs object from OpenAI's per-token entries."""
    tokens, offsets, at = [], [], offset
    for entry in entries:
        tokens.append(entry["token"])
        offsets.append(at)
        at += len(entry["token"])
    return {"tokens": tokens, "token_logprobs": [e["logprob"] for e in entries],
            "top_logprobs": [{t["token"]: t["logprob"] for t in e.get("top_logprobs", [])} for e in entries],
            "text_offset": offsets}


def embeddings_body(c: Completion, result: dict, encoding_format: str) -> dict:
    data = []
    for ch in choices_of(result):
        vector = ch["embedding"]
        if encoding_format == "base64":  # little-endian float32, as OpenAI sends it
            vector = base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode()
        data.append({"object": "embedding", "index": ch["index"], "embedding": vector})
    return {"object": "list", "data": data, "model": c.model,
            "usage": {"prompt_tokens": result["prompt_tokens"], "total_tokens": result["prompt_tokens"]}}


def completion_body(c: Completion, result: dict) -> dict:
    if c.kind == "text":
        choices = []
        for ch in choices_of(result):
            text = (c.echo or "") + ch["text"]
            logprobs = legacy_logprobs(ch["logprobs"], len(c.echo or "")) if c.logprobs else None
            choices.append({"index": ch["index"], "text": text, "logprobs": logprobs,
                            "finish_reason": ch["finish_reason"]})
        return {"id": c.id, "object": "text_completion", "created": c.created, "model": c.model,
                "system_fingerprint": None, "choices": choices, "usage": usage(result)}
    return {
        "id": c.id, "object": "chat.completion", "created": c.created, "model": c.model,
        "system_fingerprint": None,
        "choices": [_chat_choice(c, ch) for ch in choices_of(result)],
        "usage": usage(result),
    }


def _chat_choice(c: Completion, ch: dict) -> dict:
    message = {"role": "assistant", "content": ch["text"], "refusal": None}
    finish = ch["finish_reason"]
    calls = tools.parse_calls(ch["text"]) if c.tools else None
    if calls:
        message.update(content=None, tool_calls=calls)
        finish = "tool_calls" if finish == "stop" else finish
    return {"index": ch["index"], "message": message,
            "logprobs": {"content": ch["logprobs"], "refusal": None} if c.logprobs else None,
            "finish_reason": finish}


def _chunk(c: Completion, delta: dict, finish_reason: str | None = None, *, index: int = 0,
           logprobs: list | None = None, **extra) -> bytes:
    if c.kind == "text":
        choice = {"index": index, "text": delta.get("content", ""),
                  "logprobs": legacy_logprobs(logprobs) if c.logprobs and logprobs else None,
                  "finish_reason": finish_reason}
        body = {"id": c.id, "object": "text_completion", "created": c.created, "model": c.model,
                "system_fingerprint": None, "choices": [choice], **extra}
    else:
        choice = {"index": index, "delta": delta,
                  "logprobs": {"content": logprobs, "refusal": None} if c.logprobs and logprobs else None,
                  "finish_reason": finish_reason}
        body = {"id": c.id, "object": "chat.completion.chunk", "created": c.created, "model": c.model,
                "system_fingerprint": None, "choices": [choice], **extra}
    if c.include_usage and "usage" not in extra:
        body["usage"] = None
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


async def sse(c: Completion) -> AsyncIterator[bytes]:
    """Server-sent events: a role chunk, content chunks, a finish chunk, an
    optional usage chunk, then `data: [DONE]` (per choice index when n > 1). A
    generation error after the headers went out is an `error` event (the SDKs
    raise it)."""
    try:
        for index in range(c.n):
            if c.kind == "text":
                if c.echo:
                    yield _chunk(c, {"content": c.echo}, index=index)
            else:
                yield _chunk(c, {"role": "assistant", "content": ""}, index=index)
        held: dict[int, str] = {}  # tools: choice index -> text that may be a call
        prose: set[int] = set()  # choices that are not
        async for event in c.events():
            if event["type"] == "token":
                index = event.get("index", 0)
                text = event["text"]
                if c.tools and index not in prose:
                    text = held.pop(index, "") + text
                    if tools.CALL_MARK.startswith(text) or text.startswith(tools.CALL_MARK):
                        held[index] = text  # a call (or maybe one): sent whole at the end
                        continue
                    prose.add(index)
                yield _chunk(c, {"content": text}, index=index, logprobs=event.get("logprobs"))
            elif event["type"] == "done":
                result = event["result"]
                for ch in choices_of(result):
                    finish = ch["finish_reason"]
                    calls = tools.parse_calls(ch["text"]) if c.tools and ch["index"] in held else None
                    if calls:
                        delta = {"tool_calls": [{"index": k, **call} for k, call in enumerate(calls)]}
                        yield _chunk(c, delta, index=ch["index"])
                        finish = "tool_calls" if finish == "stop" else finish
                    elif ch["index"] in held:  # held back, and prose after all
                        yield _chunk(c, {"content": held[ch["index"]]}, index=ch["index"])
                    yield _chunk(c, {}, finish, index=ch["index"])
                if c.include_usage:
                    body: dict[str, Any] = {"id": c.id, "object": "text_completion" if c.kind == "text" else
                            "chat.completion.chunk", "created": c.created,
                            "model": c.model, "choices": [], "usage": usage(result)}
                    yield b"data: " + json.dumps(body).encode() + b"\n\n"
            else:
                _, body = error_status(event)
                yield b"data: " + json.dumps(body).encode() + b"\n\n"
        yield b"data: [DONE]\n\n"
    except BaseException:  # GeneratorExit / CancelledError: the client went away
        spawn(c.client_gone())  # not awaited: this task is being torn down
        raise
