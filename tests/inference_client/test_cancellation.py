"""A client that goes away frees its slot: the engine stops generating for it
within a step, streamed or not. Counted on the real path (uvicorn, a Celery
worker running SmolLM2 on llama.cpp).

Streamed: every token the engine produces is appended to the request's event
log, whose entry ids carry Redis' clock in milliseconds, so the log says how
many tokens were made after the disconnect. Not streamed: the worker writes no
token events (the done event carries the text), so the test watches the
worker's step counter (its heartbeats) run while the client waits, sees the
gateway mark the cancel once the client is gone, and reads the engine's own
count in the cancelled event: the tokens of the step the cancel caught."""

import json
import socket
import uuid
from urllib.parse import urlparse

import pytest

from core.redis import get_redis
from inference_protocol.backend import live_workers
from tests.inference_client.conftest import make_key, uvicorn_server
from tests.inference_worker.workers import celery_worker, delete_queues
from tests.polling import wait_for

# Needs services: a Celery worker, uvicorn and Redis.
pytestmark = pytest.mark.needs_services

# A queue of this run's own: a generation left by an interrupted run must not
# be the first thing the worker picks up.
SMOL = f"cancel-smollm2-{uuid.uuid4().hex[:6]}"
MODELS = {SMOL: {"engine": "llamacpp"}}
# Tokens the engine may still produce once the client is gone: the step that
# was running when the cancel arrived, and one more if the notice landed
# just as the next step began.
AFTER_DISCONNECT_MAX = 2


@pytest.fixture
def stack(django_db_blocker, transactional_db, _clean_cache, settings):
    settings.INFERENCE_MODELS = MODELS
    with celery_worker(MODELS, [f"gpu.{SMOL}"], name="cancel"):
        wait_for(lambda: live_workers(SMOL), timeout=60, what="the SmolLM2 worker")
        with uvicorn_server(django_db_blocker, INFERENCE_MODELS=json.dumps(MODELS)) as base:
            yield base
    delete_queues([f"gpu.{SMOL}"])


def _open(base: str, key: str, *, stream: bool) -> socket.socket:
    url = urlparse(base)
    body = json.dumps({"model": SMOL, "max_tokens": 400, "temperature": 0, "stream": stream,
                       "messages": [{"role": "user", "content": "Tell me a very long story about "
                                     f"a dragon and a lighthouse keeper. ({uuid.uuid4().hex})"}]}).encode()
    sock = socket.create_connection((url.hostname, url.port))
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 + f"Authorization: Bearer {key}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    return sock


def _tokens(request_id: str) -> list[int]:
    """Millisecond timestamps of the token events in the request's log."""
    entries = get_redis().xrange(f"gen:{request_id}:events")
    return [int(entry_id.split(b"-")[0]) for entry_id, fields in entries
            if json.loads(fields[b"e"])["type"] == "token"]


def _request_id_streaming(sock: socket.socket) -> str:
    buffer = b""
    while b"chatcmpl-" not in buffer or b"\n\n" not in buffer.split(b"chatcmpl-", 1)[1]:
        buffer += sock.recv(4096)
    return buffer.split(b"chatcmpl-", 1)[1][:32].decode()


def _steps() -> int:
    (worker,) = live_workers(SMOL)
    return worker["steps"]


def _cancel_marks() -> set[bytes]:
    return set(get_redis().scan_iter(match="gen:*:cancel"))


def _slot_freed() -> None:
    wait_for(lambda: all(r["running"] == 0 for r in live_workers(SMOL)),
             what=f"the slot freed: {live_workers(SMOL)}")


def _disconnect_and_count(sock: socket.socket, request_id: str) -> tuple[int, int]:
    wait_for(lambda: len(_tokens(request_id)) >= 5, timeout=90, what="tokens before the disconnect")
    gone_ms = int(get_redis().time()[0] * 1000 + get_redis().time()[1] / 1000)
    sock.close()
    terminal = wait_for(lambda: get_redis().get(f"gen:{request_id}:result"), timeout=30,
                        what="the terminal event")
    assert json.loads(terminal)["code"] == "cancelled"
    stamps = _tokens(request_id)
    return len(stamps), sum(1 for t in stamps if t > gone_ms)


def test_should_stop_generating_when_a_streaming_client_disconnects(stack):
    _, key = make_key("paid")
    sock = _open(stack, key, stream=True)
    request_id = _request_id_streaming(sock)
    total, after = _disconnect_and_count(sock, request_id)
    assert total < 400 and after <= AFTER_DISCONNECT_MAX, (total, after)
    _slot_freed()


def test_should_stop_generating_when_a_waiting_client_disconnects(stack):
    _, key = make_key("paid")
    steps, marks = _steps(), _cancel_marks()
    sock = _open(stack, key, stream=False)
    wait_for(lambda: _steps() >= steps + 5, timeout=90, what="steps while the client waits")
    sock.close()
    (cancel,) = wait_for(lambda: _cancel_marks() - marks, timeout=30, what="the gateway's cancel mark")
    request_id = cancel.decode().split(":")[1]
    terminal = json.loads(wait_for(lambda: get_redis().get(f"gen:{request_id}:result"), timeout=30,
                                   what="the terminal event"))
    assert terminal["code"] == "cancelled"
    assert 5 <= terminal["completion_tokens"] < 400, terminal
    assert terminal["tokens_after_cancel"] <= 1, terminal  # the step it was in, no more
    # No token events: the waiting client's answer would have come from the done event.
    assert _tokens(request_id) == []
    _slot_freed()
