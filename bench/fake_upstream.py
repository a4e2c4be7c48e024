"""A fake OpenAI-compatible model server: the last message reversed, cut to
max_tokens characters. With ``"stream": true`` (what the `upstream` engine
sends) it streams one character per SSE chunk, CALL_S before the first and
PER_TOKEN_S between chunks (as a model server decoding at 1 / PER_TOKEN_S
tokens/s); otherwise it answers one JSON chat.completion after CALL_S plus
PER_TOKEN_S per character (what a proxy forwarding a non-streaming request
sends). GET /v1/models lists the model "fake".

The fixed-cost engine answers a whole output in one step (one SSE chunk), which
cannot show how a page keeps up with a stream; bench/playground_page.py serves
this with uvicorn and points an `upstream` model at it, so tokens take the real
path (worker engine -> gateway -> the run route's SSE -> the page).
bench/ceiling.py points both our `upstream` engine and LiteLLM's proxy at it
with both times 0 (a model that answers at once).

    .venv/bin/python -m uvicorn bench.fake_upstream:app --port PORT
"""

from __future__ import annotations

import asyncio
import json
import os
import time

CALL_S = float(os.environ.get("FAKE_UPSTREAM_CALL_S", "0.05"))
PER_TOKEN_S = float(os.environ.get("FAKE_UPSTREAM_PER_TOKEN_S", "0.02"))
MODELS = json.dumps({"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": "bench"}]})


def _event(choice: dict | None, **extra) -> dict:
    return {"type": "http.response.body", "more_body": True, "body": b"data: " + json.dumps(
        {"id": "fake", "object": "chat.completion.chunk", "model": "fake",
         "choices": [choice] if choice else [], **extra}).encode() + b"\n\n"}


async def _answer(send, status: int, body: bytes, content_type: bytes = b"application/json") -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    if scope["method"] == "GET" and scope["path"].rstrip("/").endswith("/models"):
        await _answer(send, 200, MODELS.encode())
        return
    if scope["method"] != "POST":
        await _answer(send, 404, b"")
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
    finish = "length" if len(text) < len(prompt) else "stop"
    usage = {"prompt_tokens": len(prompt), "completion_tokens": len(text),
             "total_tokens": len(prompt) + len(text)}
    if not request.get("stream"):
        wait = CALL_S + len(text) * PER_TOKEN_S
        if wait:
            await asyncio.sleep(wait)
        await _answer(send, 200, json.dumps({
            "id": "fake", "object": "chat.completion", "created": int(time.time()), "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": finish}],
            "usage": usage}).encode())
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream")]})
    start = time.monotonic() + CALL_S
    for i, char in enumerate(text):
        await asyncio.sleep(max(0.0, start + i * PER_TOKEN_S - time.monotonic()))
        await send(_event({"index": 0, "delta": {"content": char}, "finish_reason": None}))
    await send(_event({"index": 0, "delta": {}, "finish_reason": finish}))
    await send(_event(None, usage=usage))
    await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})
