"""A fake OpenAI-compatible model server that streams: the last message
reversed, one character per SSE chunk, CALL_S before the first and
PER_TOKEN_S between chunks (as a model server decoding at 1 / PER_TOKEN_S tokens/s).

The fixed-cost engine answers a whole output in one step (one SSE chunk), which
cannot show how a page keeps up with a stream; bench/playground_page.py serves
this with uvicorn and points an `upstream` model at it, so tokens take the real
path (worker engine -> gateway -> the run route's SSE -> the page).

    .venv/bin/python -m uvicorn bench.fake_upstream:app --port PORT
"""

from __future__ import annotations

import asyncio
import json
import os
import time

CALL_S = float(os.environ.get("FAKE_UPSTREAM_CALL_S", "0.05"))
PER_TOKEN_S = float(os.environ.get("FAKE_UPSTREAM_PER_TOKEN_S", "0.02"))


def _event(choice: dict | None, **extra) -> dict:
    return {"type": "http.response.body", "more_body": True, "body": b"data: " + json.dumps(
        {"id": "fake", "object": "chat.completion.chunk", "model": "fake",
         "choices": [choice] if choice else [], **extra}).encode() + b"\n\n"}


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    if scope["method"] != "POST":
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    raw = b""
    while True:
        message = await receive()
        raw += message.get("body", b"")
        if not message.get("more_body"):
            break
    request = json.loads(raw)
    prompt = request["messages"][-1]["content"]
    text = prompt[::-1][: request.get("max_tokens") or 256]
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream")]})
    start = time.monotonic() + CALL_S
    for i, char in enumerate(text):
        await asyncio.sleep(max(0.0, start + i * PER_TOKEN_S - time.monotonic()))
        await send(_event({"index": 0, "delta": {"content": char}, "finish_reason": None}))
    finish = "length" if len(text) < len(prompt) else "stop"
    await send(_event({"index": 0, "delta": {}, "finish_reason": finish}))
    await send(_event(None, usage={"prompt_tokens": len(prompt), "completion_tokens": len(text),
                                   "total_tokens": len(prompt) + len(text)}))
    await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})
