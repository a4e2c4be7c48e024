"""Refusals answered from memory (inference_client/refusals.py): a key its
requests bucket refused is refused again before Django and Redis, until its
Retry-After; the answer is the full path's; other keys, other paths and calls
with an Idempotency-Key go through."""

import asyncio
import http.client
import io
import json
import socket

import httpx
import pytest
from django.conf import settings

from core.redis import get_aredis
from inference_client.refusals import MAX_REMEMBERED, RefusalGate, RefusalMemory
from tests.inference_client.conftest import MODEL, database_url, make_key, stack_env
from tests.livesubprocess import free_port, running_server

PATH = "/v1/chat/completions"
KEY = b"Bearer py_refused"


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class App:
    """The app behind the gate: counts what reaches it."""

    def __init__(self):
        self.calls = 0

    async def __call__(self, scope, receive, send):
        self.calls += 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


def call(gate, *, path=PATH, method="POST", headers=((b"authorization", KEY),)):
    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "path": path, "method": method, "headers": list(headers)}
    asyncio.run(gate(scope, receive, send))
    start, body = sent
    return start["status"], dict(start["headers"]), json.loads(body["body"])


@pytest.fixture
def gate():
    clock, app = Clock(), App()
    memory = RefusalMemory(clock)
    return RefusalGate(app, (PATH,), memory), memory, clock, app


def test_should_refuse_a_remembered_key_without_the_app_until_its_retry_after(gate):
    gate, memory, clock, app = gate
    memory.remember(KEY, 2500, "free", "1")
    status, headers, body = call(gate)
    assert (status, app.calls) == (429, 0)
    assert body["error"]["code"] == "rate_limit_exceeded" and body["error"]["reason"] == "requests"
    assert body["error"]["type"] == "rate_limit_error"
    assert headers[b"retry-after"] == b"3" and headers[b"retry-after-ms"] == b"2500"
    assert headers[b"x-ratelimit-limit-requests"] == b"1"
    assert headers[b"x-ratelimit-remaining-requests"] == b"0"
    assert len(headers[b"x-request-id"]) == 32
    clock.now += 2.0
    assert call(gate)[1][b"retry-after-ms"] == b"500"
    clock.now += 0.5
    assert call(gate)[0] == 200 and app.calls == 1


def test_should_let_through_other_keys_paths_methods_and_idempotent_retries(gate):
    gate, memory, clock, app = gate
    memory.remember(KEY, 10_000, "free", "1")
    assert call(gate, headers=[(b"authorization", b"Bearer py_other")])[0] == 200
    assert call(gate, path="/v1/models")[0] == 200
    assert call(gate, method="GET")[0] == 200
    assert call(gate, headers=[(b"authorization", KEY), (b"idempotency-key", b"k1")])[0] == 200
    assert call(gate, headers=[])[0] == 200
    assert app.calls == 5
    # A client's own request id comes back; one that is not plain is replaced.
    for sent, plain in ((b"abc-1", True), (b"a b", False)):
        echoed = call(gate, headers=[(b"authorization", KEY), (b"x-request-id", sent)])[1][b"x-request-id"]
        assert (echoed == sent) is plain


def test_should_forget_the_oldest_key_past_its_bound():
    clock = Clock()
    memory = RefusalMemory(clock)
    for i in range(MAX_REMEMBERED + 1):
        memory.remember(f"Bearer k{i}".encode(), 60_000, "free", "1")
    assert memory.refusal(b"Bearer k0") is None
    assert memory.refusal(f"Bearer k{MAX_REMEMBERED}".encode()) is not None
    # Expired entries go first.
    clock.now += 61
    memory.remember(b"Bearer fresh", 60_000, "free", "1")
    assert memory.refusal(b"Bearer k1") is None and memory.refusal(b"Bearer fresh") is not None


@pytest.fixture
def one_a_minute(django_db_blocker, worker, transactional_db):
    """`manage.py serve`: its HTTP protocol asks the gate before the request's task (config/http.py)."""
    port = free_port()
    env = stack_env(DATABASE_URL=database_url(django_db_blocker), RATE_LIMIT_FREE_RPM="1")
    with running_server(["manage.py", "serve", "--no-demo", "--port", str(port)], env, port) as server:
        yield server.base


@pytest.mark.needs_services
async def test_should_answer_a_flooding_key_from_memory_as_the_full_path_would(one_a_minute):
    key, raw = await asyncio.to_thread(make_key, "free")
    body = {"model": MODEL, "messages": [{"role": "user", "content": "memo"}], "max_tokens": 4}
    auth = {"Authorization": f"Bearer {raw}"}
    async with httpx.AsyncClient(base_url=one_a_minute, timeout=30) as http:
        assert (await http.post(PATH, json=body, headers=auth)).status_code == 200
        full = await http.post(PATH, json=body, headers=auth)  # refused by Redis
        # The bucket forgotten in Redis: only the process's memory can refuse now.
        await get_aredis().delete(f"rl:k:k{key.pk}:r")
        remembered = await http.post(PATH, json=body, headers={**auth, "X-Request-ID": "flood-1"})
        assert full.status_code == remembered.status_code == 429
        assert full.json()["error"]["code"] == remembered.json()["error"]["code"] == "rate_limit_exceeded"
        assert remembered.json()["error"]["reason"] == "requests"
        assert 1 <= int(remembered.headers["Retry-After"]) <= int(full.headers["Retry-After"])
        assert remembered.headers["x-ratelimit-limit-requests"] == full.headers["x-ratelimit-limit-requests"]
        assert remembered.headers["x-request-id"] == "flood-1"
        # The gate comes first: a remembered key's oversized body is not read, the 429 stands.
        oversized = b"x" * (settings.INFERENCE_MAX_BODY_BYTES + 1)
        assert (await http.post(PATH, content=oversized, headers=auth)).status_code == 429
        # A retry with an Idempotency-Key takes the full path, which admits it now.
        retried = await http.post(PATH, json=body, headers={**auth, "Idempotency-Key": "memo-1"})
        assert retried.status_code == 200, retried.text


class _Unclosed(io.BufferedReader):
    def close(self):  # http.client closes its file after each response: this one goes on
        pass


class _Stream:
    """One buffered reader for several responses on a socket (http.client reads one)."""

    def __init__(self, sock: socket.socket):
        self.file = _Unclosed(socket.SocketIO(sock, "rb"))

    def makefile(self, mode):
        return self.file

    def response(self) -> tuple[int, dict, bytes]:
        answer = http.client.HTTPResponse(self)  # type: ignore[arg-type]
        answer.begin()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()


def _post(auth: str, body: bytes, *extra: str) -> bytes:
    head = [f"POST {PATH} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: {auth}",
            "Content-Type: application/json", f"Content-Length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


GET_HEALTH = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


@pytest.mark.needs_services
async def test_should_answer_a_remembered_key_from_its_headers_and_keep_the_connection_in_order(one_a_minute):
    key, raw = await asyncio.to_thread(make_key, "free")
    auth = f"Bearer {raw}"
    body = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "memo"}],
                       "max_tokens": 4}).encode()
    async with httpx.AsyncClient(base_url=one_a_minute, timeout=30) as client:
        assert (await client.post(PATH, content=body, headers={"Authorization": auth})).status_code == 200
        assert (await client.post(PATH, content=body, headers={"Authorization": auth})).status_code == 429
    await get_aredis().delete(f"rl:k:k{key.pk}:r")  # from here only the process's memory refuses

    def exchange() -> tuple[list, list, bytes]:
        port = int(one_a_minute.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            stream = _Stream(sock)
            # Refused with its body unread by any app, then the next request on the connection.
            sock.sendall(_post(auth, body) + GET_HEALTH)
            kept = [stream.response(), stream.response()]
            # Pipelined behind a request still in flight: the answers keep their order.
            sock.sendall(GET_HEALTH + _post(auth, body))
            ordered = [stream.response(), stream.response()]
            # A refusal that asks to close the connection closes it.
            sock.sendall(_post(auth, body, "Connection: close"))
            closing = stream.response()
            return kept, ordered + [closing], stream.file.read()

    kept, (health, refused, closing), rest = await asyncio.to_thread(exchange)
    assert [status for status, _, _ in kept] == [429, 200]
    status, headers, answer = kept[0]
    assert json.loads(answer)["error"]["code"] == "rate_limit_exceeded"
    assert 1 <= int(headers["retry-after"]) <= 60 and headers["x-ratelimit-remaining-requests"] == "0"
    assert headers["content-type"] == "application/json" and len(headers["x-request-id"]) == 32
    assert "date" in headers and "server" in headers  # the server's own headers, as on any answer
    assert (health[0], refused[0]) == (200, 429)
    assert closing[0] == 429 and closing[1]["connection"] == "close" and rest == b""
