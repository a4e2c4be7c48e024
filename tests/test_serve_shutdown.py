"""`manage.py serve` sent SIGTERM under load: it stops accepting, lets what is in
flight finish until SHUTDOWN_GRACE_S, ends the rest with a terminal
server_shutting_down error (a stream's last frame), closes websockets with 1012
(service restart) and exits. Every request is counted: each completed or got
that error; none lost, none answered twice. On a fixed-cost device of 4 inputs /
1 s a call, 20 requests are 5 calls (6 if the first starts before all have
arrived), of which the first ends within the 3 s grace and the last cannot:
on the embedded default (its worker runs in the serve process) and with the
services (a Celery worker, events through Redis)."""

import asyncio
import json
import os
import re
import signal
import uuid

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from inference_protocol.backend import live_workers
from inference_protocol.events import RedisEventLog
from tests.chat import live
from tests.factories import ApiKeyFactory
from tests.inference_worker.workers import celery_worker, delete_queues
from tests.livesubprocess import embedded_env, free_port, running_server
from tests.polling import wait_for
from tests.test_embedded_default import _login

pytestmark = [pytest.mark.slow]

GRACE_S, CALL_S, INPUTS = 3.0, 1.0, 4
PLAIN, STREAMS = 4, 16
MODELS = {"slow": {"engine": "fixed_cost", "max_inputs": INPUTS, "call_s": CALL_S}}


async def _plain(client: httpx.AsyncClient, text: str, model: str = "slow") -> tuple[str, str, str]:
    r = await client.post("/v1/chat/completions", json={"model": model, "messages": [
        {"role": "user", "content": text}]})
    if r.status_code == 200:
        assert r.json()["choices"][0]["message"]["content"] == text[::-1]
        return "completed", text, ""
    assert r.status_code == 503 and r.json()["error"]["code"] == "server_shutting_down", r.text
    return "ended", text, ""


async def _stream(client: httpx.AsyncClient, text: str, started: asyncio.Event,
                  model: str = "slow") -> tuple[str, str, str]:
    frames, done = [], 0
    async with client.stream("POST", "/v1/chat/completions", json={
            "model": model, "stream": True, "messages": [{"role": "user", "content": text}]}) as r:
        assert r.status_code == 200
        async for line in r.aiter_lines():
            if not line.startswith("data: "):
                continue
            started.set()
            if line == "data: [DONE]":
                done += 1
            else:
                frames.append(json.loads(line[len("data: "):]))
    assert done == 1, frames  # one ending, whichever it is
    errors = [f["error"] for f in frames if "error" in f]
    if errors:
        assert [e["code"] for e in errors] == ["server_shutting_down"] and "error" in frames[-1], frames
        return "ended", text, frames[0]["id"].removeprefix("chatcmpl-")
    assert "".join(f["choices"][0]["delta"].get("content", "") for f in frames) == text[::-1]
    assert frames[-1]["choices"][0]["finish_reason"] is not None
    return "completed", text, frames[0]["id"].removeprefix("chatcmpl-")


async def _websocket_close_code(base: str, cookies: dict, opened: asyncio.Event) -> int:
    cookie = "; ".join(f"{k}={v}" for k, v in cookies.items())
    async with connect(base.replace("http", "ws") + "/ws/chat/", origin=base,
                       additional_headers={"Cookie": cookie}) as ws:
        opened.set()
        try:
            while True:
                await ws.recv()
        except ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd else -1


async def _load_and_stop(server, clients: list[httpx.AsyncClient], model: str, *before_sigterm) -> list:
    """20 requests (4 plain, then 16 streams) in flight, SIGTERM, every outcome;
    the server stops accepting and exits within the grace and its hooks."""
    plain = [asyncio.create_task(_plain(c, f"plain {i}", model)) for i, c in enumerate(clients[:PLAIN])]
    starts = [asyncio.Event() for _ in range(STREAMS)]
    streams = [asyncio.create_task(_stream(c, f"stream {i}", starts[i], model))
               for i, c in enumerate(clients[PLAIN:])]
    await asyncio.wait_for(asyncio.gather(*before_sigterm, *(s.wait() for s in starts)), 60)
    server.proc.send_signal(signal.SIGTERM)
    outcomes = await asyncio.gather(*plain, *streams)  # a transport error here: a request lost
    # No longer accepting: a new connection is refused. (Not a client of the load: its
    # kept-alive connection may be one the server is closing, a ReadError instead.)
    async with httpx.AsyncClient(base_url=server.base) as fresh:
        with pytest.raises(httpx.ConnectError):
            await fresh.get("/healthz")
    exit_code = await asyncio.to_thread(server.proc.wait, GRACE_S + 10)
    for client in clients:
        await client.aclose()
    output = server.output()
    # uvicorn re-raises the SIGTERM it handled once it is done: the exit a supervisor expects.
    assert exit_code in (0, -signal.SIGTERM), output
    kinds = [kind for kind, _, _ in outcomes]
    assert len(outcomes) == PLAIN + STREAMS and {text for _, text, _ in outcomes} == (
        {f"plain {i}" for i in range(PLAIN)} | {f"stream {i}" for i in range(STREAMS)})
    # The call under way at SIGTERM finishes (how full it was, and how many calls after it end
    # within the grace, is the machine's timing); the last calls cannot, and are ended.
    assert kinds.count("completed") >= 1 and kinds.count("ended") >= INPUTS, kinds
    # Nothing was cut off at the deadline. (uvicorn may also wait a moment for a
    # task that outlives its connection: a chat socket's disconnect handler
    # touching the database after its close, slower on a loaded machine.)
    assert not re.search(r"Traceback|timeout graceful shutdown exceeded", output), output
    return outcomes


@pytest.mark.any_profile  # its own embedded server either way
async def test_serve_sent_sigterm_finishes_or_ends_every_request_and_exits(tmp_path):
    port = free_port()
    env = embedded_env(tmp_path, INFERENCE_MODELS=json.dumps(MODELS), SHUTDOWN_GRACE_S=str(GRACE_S))
    with running_server(["manage.py", "serve", "--port", str(port)], env, port) as server:
        login = _login(server.base, "demo", "promptyard-demo")
        cookies = dict(login.cookies)
        headers = {"X-CSRFToken": cookies["csrftoken"], "Origin": server.base}
        clients = [httpx.AsyncClient(base_url=server.base, cookies=cookies, headers=headers, timeout=60)
                   for _ in range(PLAIN + STREAMS)]
        opened = asyncio.Event()
        ws = asyncio.create_task(_websocket_close_code(server.base, cookies, opened))
        await _load_and_stop(server, clients, "slow", opened.wait())
        assert await asyncio.wait_for(ws, 10) == 1012  # service restart: the page reconnects


@pytest.mark.needs_services
@pytest.mark.django_db(transaction=True)
async def test_serve_with_services_sent_sigterm_finishes_or_ends_every_request_and_exits(user):
    """The same through a Celery worker and Redis: the ended generations are
    cancelled on the worker."""
    model = f"stop-{uuid.uuid4().hex[:8]}"
    models = {model: MODELS["slow"]}
    _, raw = await asyncio.to_thread(ApiKeyFactory.create_with_raw, user=user, tier="paid")
    port = free_port()
    env = {**os.environ, "DATABASE_URL": live.test_database_url(), "INFERENCE_MODELS": json.dumps(models),
           "SHUTDOWN_GRACE_S": str(GRACE_S), "HEARTBEAT_INTERVAL_S": "0.5"}
    try:
        with celery_worker(models, [f"gpu.{model}"], concurrency=None, name=f"stop-{model}"), \
                running_server(["manage.py", "serve", "--no-demo", "--port", str(port)], env, port) as server:
            await asyncio.to_thread(wait_for, lambda: live_workers(model), 90, 0.1, "the worker")
            clients = [httpx.AsyncClient(base_url=server.base, timeout=60,
                                         headers={"Authorization": f"Bearer {raw}"})
                       for _ in range(PLAIN + STREAMS)]
            outcomes = await _load_and_stop(server, clients, model)
            log = RedisEventLog()
            ended = [rid for kind, _, rid in outcomes if kind == "ended" and rid]  # the streams' ids
            finals = await asyncio.to_thread(wait_for, lambda: all(map(log.final, ended)) and [
                log.final(rid) for rid in ended], 30, 0.1, "the ended generations' terminal events")
            # Their generations were cancelled on the worker (those still waiting there surely).
            assert "cancelled" in {event.get("code") for event in finals}, finals
    finally:
        delete_queues([f"gpu.{model}"])
