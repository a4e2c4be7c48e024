"""The upstream engine's HTTP client (inference_worker.engines.upstream_http) against a
raw HTTP/1.1 server on 127.0.0.1 that writes exactly the bytes a test gives it:
keep-alive reuse, a server that closes a kept-alive connection, each body framing,
an event split across reads, cancellation, the read timeout, a refused connect."""

from __future__ import annotations

import datetime
import ipaddress
import json
import socket
import ssl
import threading
import time

import pytest

from inference_worker.engines import upstream as upstream_engine
from inference_worker.engines.base import EngineError, SamplingParams, Sequence
from inference_worker.engines.upstream import UpstreamEngine
from inference_worker.engines.upstream_http import SSEDecoder
from tests.livesubprocess import free_port

pytestmark = pytest.mark.any_profile

CLOSE = object()  # in an answer: close the connection here


def wait_gate(server, conn):
    server.gate.wait()


def wait_for_the_client_to_close(server, conn):
    while conn.recv(4096):
        pass


def event(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def sse(text: str) -> list[bytes]:
    """A chat completion stream of ``text``, one word per event, then usage and [DONE]."""
    words = text.split(" ")
    out = [event({"choices": [{"index": 0, "delta": {"content": (" " if i else "") + w}}]})
           for i, w in enumerate(words)]
    out.append(event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    out.append(event({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": len(words)}}))
    return [*out, b"data: [DONE]\n\n"]


def chunked(pieces: list[bytes], status: str = "200 OK") -> list:
    head = f"HTTP/1.1 {status}\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    return [head.encode(), *(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces), b"0\r\n\r\n"]


def sized(body: bytes, status: str = "200 OK", extra: str = "") -> list:
    return [f"HTTP/1.1 {status}\r\nContent-Type: text/event-stream\r\nContent-Length: {len(body)}\r\n"
            f"{extra}\r\n".encode() + body]


class RawUpstream:
    """``answer(prompt, connection_no)`` gives what to do for a request: bytes to send,
    callables to run in between (``f(server, connection)``), CLOSE. Counts connections."""

    def __init__(self, answer, tls: ssl.SSLContext | None = None):
        self.answer, self.tls = answer, tls
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepts = 0
        self.requests: list[str] = []
        self.client_closed = threading.Semaphore(0)  # one release per connection the client closed
        self.gate = threading.Event()  # what an answer may wait for
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepts += 1
            threading.Thread(target=self._serve, args=(conn, self.accepts), daemon=True).start()

    def _serve(self, conn: socket.socket, number: int):
        if self.tls:
            try:
                conn = self.tls.wrap_socket(conn, server_side=True)
            except OSError:  # the client refused the certificate
                conn.close()
                return
        with conn, conn.makefile("rb") as f:
            while line := f.readline():
                length = 0
                while (header := f.readline()) not in (b"\r\n", b""):
                    name, _, value = header.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                body = json.loads(f.read(length)) if length else {}
                prompt = body["messages"][-1]["content"] if body else line.decode().split()[1]
                self.requests.append(prompt)
                for piece in self.answer(prompt, number):
                    if piece is CLOSE:
                        return
                    if callable(piece):
                        piece(self, conn)
                    else:
                        conn.sendall(piece)
            self.client_closed.release()

    def close(self):
        self.gate.set()
        self.sock.close()


@pytest.fixture
def upstream(request):
    servers = []

    def start(answer, tls=None):
        servers.append(RawUpstream(answer, tls))
        return servers[-1]
    yield start
    for s in servers:
        s.close()


def engine(port, scheme="http", **kw) -> UpstreamEngine:
    kw.setdefault("connect_timeout", 2.0)
    kw.setdefault("read_timeout", 5.0)
    return UpstreamEngine(base_url=f"{scheme}://127.0.0.1:{port}/v1", model="up", **kw)


def seq(i, prompt):
    return Sequence(id=f"h{i}", messages=[{"role": "user", "content": prompt}],
                    params=SamplingParams(max_tokens=16))


def complete(eng: UpstreamEngine, s: Sequence, timeout: float = 10.0) -> str:
    """Step one sequence to its end, and wait for its task to end (its connection is back
    in the pool or closed: a finished stream may still be reading its body's last bytes)."""
    text, new = "", [s]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        (r,) = eng.step([] if new else [s], new)
        new, text = [], text + r.text
        if r.finished:
            stream = eng._streams[s.id]
            eng.release(s.id)
            stream.thread.join(timeout)
            assert not stream.thread.is_alive()
            return text
    raise AssertionError("not finished within the timeout")


@pytest.fixture
def long_idle(monkeypatch):
    """Kept connections outlive a slow step on a loaded machine."""
    monkeypatch.setattr(upstream_engine, "IDLE_S", 60.0)


@pytest.mark.parametrize("framing", ["chunked", "content-length"])
def test_a_second_request_reuses_the_connection(upstream, long_idle, framing):
    def answer(prompt, _):
        pieces = sse(f"re {prompt}")
        return chunked(pieces) if framing == "chunked" else sized(b"".join(pieces))
    server = upstream(answer)
    eng = engine(server.port)
    try:
        assert complete(eng, seq(0, "one")) == "re one"
        assert complete(eng, seq(1, "two")) == "re two"
        assert eng.health()
    finally:
        eng.close()
    assert server.accepts == 1 and server.requests == ["one", "two", "/v1/models"]


def test_a_body_that_ends_with_the_connection_is_read_and_not_reused(upstream):
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    server = upstream(lambda prompt, _: [head, *sse(prompt), CLOSE])
    eng = engine(server.port)
    try:
        assert complete(eng, seq(0, "first")) == "first"
        assert complete(eng, seq(1, "second")) == "second"
    finally:
        eng.close()
    assert server.accepts == 2


def test_a_request_on_a_kept_connection_the_server_closed_is_sent_again(upstream, long_idle):
    """The server keeps the first connection after its answer, then closes it on the next
    request without answering (as a server whose keep-alive just ran out): the request
    goes again, on a new connection, and succeeds."""
    def answer(prompt, number):
        if number == 1 and prompt == "second":
            return [CLOSE]
        return chunked(sse(prompt))
    server = upstream(answer)
    eng = engine(server.port, connect_retries=0)
    try:
        assert complete(eng, seq(0, "first")) == "first"
        assert complete(eng, seq(1, "second")) == "second"
    finally:
        eng.close()
    assert server.accepts == 2 and server.requests == ["first", "second", "second"]


def test_a_server_that_closes_an_idle_connection(upstream):
    server = upstream(lambda prompt, _: [*chunked(sse(prompt)), CLOSE])  # no Connection: close
    eng = engine(server.port, connect_retries=0)
    try:
        for i in range(3):
            assert complete(eng, seq(i, f"n{i}")) == f"n{i}"
    finally:
        eng.close()
    assert server.accepts == 3


def test_an_event_split_across_reads(upstream):
    first = sse("split here")
    cut = len(first[0]) // 2
    body = b"".join(first)
    server = upstream(lambda prompt, _: [
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body[:cut], wait_gate, body[cut:]])
    eng = engine(server.port)
    s = seq(0, "x")
    try:
        (r,) = eng.step([], [s])
        stream = eng._streams[s.id]
        deadline = time.monotonic() + 5
        while stream.response is None and time.monotonic() < deadline:
            assert eng.step([s], [])[0].text == ""  # half an event is no text
        assert stream.response is not None
        server.gate.set()
        text = r.text
        while not (r := eng.step([s], [])[0]).finished:
            text += r.text
        assert text + r.text == "split here"
    finally:
        eng.close()


def test_the_sse_decoder_joins_lines_and_keeps_partial_ones():
    d = SSEDecoder()
    assert d.feed(b"data: {\"a\":\r\ndata:  1}\r") == []
    assert d.feed(b"\n\r\n: a comment\n\ndata:\n\nevent: x\nid: 3\ndata: [DO") == [b'{"a":\n 1}', b""]
    assert d.feed(b"NE]\n\n") == [b"[DONE]"]


def test_keep_alive_events_and_comments_are_skipped(upstream):
    pieces = sse("still here")
    server = upstream(lambda prompt, _: chunked([b": ping\n\n", b"data:\n\n", *pieces]))
    eng = engine(server.port)
    try:
        assert complete(eng, seq(0, "x")) == "still here"
    finally:
        eng.close()


def test_release_mid_stream_closes_its_connection_and_frees_the_slot(upstream):
    """A released stream's connection closes (the server sees it go) and its slot is free:
    more releases than the pool has slots (max_batch_size + 1), then a request still runs."""
    def answer(prompt, _):
        if prompt.startswith("endless"):
            tick = event({"choices": [{"index": 0, "delta": {"content": "tick"}}]})
            return [*chunked([tick])[:2], wait_for_the_client_to_close]
        return chunked(sse(prompt))
    server = upstream(answer)
    eng = engine(server.port, max_batch_size=1)
    try:
        for i in range(3):
            s = seq(i, f"endless {i}")
            text, new = "", [s]
            deadline = time.monotonic() + 5
            while not text and time.monotonic() < deadline:
                text += eng.step([] if new else [s], new)[0].text
                new = []
            assert text == "tick"
            stream = eng._streams[s.id]
            eng.release(s.id)
            stream.thread.join(timeout=5)
            assert not stream.thread.is_alive() and stream.error is None and not stream.done
            assert eng._http.pool.count == 0
            assert server.client_closed.acquire(timeout=5)
        assert complete(eng, seq(9, "after")) == "after"
    finally:
        eng.close()
    assert server.accepts == 4


def test_a_silent_upstream_times_out(upstream):
    server = upstream(lambda prompt, _: [chunked([])[0], wait_gate])
    eng = engine(server.port, read_timeout=0.2)
    s = seq(0, "x")
    try:
        with pytest.raises(EngineError) as e:
            complete(eng, s)
    finally:
        eng.close()
    assert e.value.code == "upstream_timeout" and "127.0.0.1" not in str(e.value)


def test_a_refused_connect_is_upstream_unavailable():
    eng = engine(free_port(), connect_retries=1)
    try:
        with pytest.raises(EngineError) as e:
            complete(eng, seq(0, "x"))
        assert not eng.health()
    finally:
        eng.close()
    assert e.value.code == "upstream_unavailable"


def test_a_base_url_that_is_not_http_is_refused_at_load():
    with pytest.raises(EngineError) as e:
        UpstreamEngine(base_url="ftp://example.org/v1")
    assert e.value.code == "engine_load_failed"


def self_signed(directory) -> tuple[str, str]:
    """A certificate for 127.0.0.1 that is its own CA; (cert file, key file)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "upstream test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_file), str(key_file)


@pytest.mark.parametrize("trusted", [True, False])
def test_https_verifies_the_certificate(upstream, tmp_path, monkeypatch, long_idle, trusted):
    """The default context: the system's CAs (here SSL_CERT_FILE names the test's own)."""
    cert, key = self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = upstream(lambda prompt, _: chunked(sse(prompt)), tls=context)
    if trusted:
        monkeypatch.setenv("SSL_CERT_FILE", cert)
    eng = engine(server.port, scheme="https", connect_retries=0)
    try:
        if trusted:
            assert complete(eng, seq(0, "secret one")) == "secret one"
            assert complete(eng, seq(1, "secret two")) == "secret two"
        else:
            with pytest.raises(EngineError) as e:
                complete(eng, seq(0, "x"))
            assert e.value.code == "upstream_unavailable"
    finally:
        eng.close()
    assert server.accepts == 1 and server.requests == (["secret one", "secret two"] if trusted else [])
