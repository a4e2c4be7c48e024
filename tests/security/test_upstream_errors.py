"""An upstream (OpenAI-compatible) server's failures reached the client with the
upstream's base URL and its response body in the message. They now carry a stable
code and a generic message; the detail is logged on the worker. Driven against a
real local HTTP server that fails in several ways, and through /v1 on the
in-process worker."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from inference_client.rendering import error_status
from inference_protocol.events import MemoryEventLog
from inference_protocol.generation import GenerationRequest
from inference_worker.engines.base import EngineError, SamplingParams, Sequence
from inference_worker.engines.upstream import UpstreamEngine
from inference_worker.inprocess import InProcessBackend
from tests.livesubprocess import free_port

pytestmark = pytest.mark.any_profile

SECRET = "s3cr3t-internal-token-9f2c"  # what an upstream's error body might leak
API_KEY = "sk-upstream-key-4b1d"


class FailingUpstream(BaseHTTPRequestHandler):
    """The last user message picks the failure."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        if prompt in ("500", "401"):
            payload = json.dumps({"error": {"message": f"db at postgres://admin:{SECRET}@10.0.0.5"}})
            self._send(int(prompt), "application/json", payload.encode())
        elif prompt == "error-event":
            self._send(200, "text/event-stream",
                       f'data: {{"error": {{"message": "{SECRET}"}}}}\n\n'.encode())
        elif prompt == "malformed":
            self._send(200, "text/event-stream", f"data: not json {SECRET}\n\n".encode())

    def _send(self, status: int, content_type: str, data: bytes):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def upstream():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FailingUpstream)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def _engine(base_url: str) -> UpstreamEngine:
    return UpstreamEngine(base_url=base_url, model="up", api_key=API_KEY, connect_timeout=2.0,
                          read_timeout=5.0, connect_retries=0)


def _error_of(engine: UpstreamEngine, prompt: str) -> EngineError:
    seq = Sequence(id=uuid.uuid4().hex, messages=[{"role": "user", "content": prompt}],
                   params=SamplingParams(max_tokens=8))
    new, deadline = [seq], time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            engine.step([] if new else [seq], new)
        except EngineError as exc:
            return exc
        new = []
    raise AssertionError(f"no error for {prompt!r} within 10 s")


def _assert_clean(text: str, base_url: str) -> None:
    for leak in (SECRET, API_KEY, base_url, base_url.split("//")[1].split("/")[0], "postgres://"):
        assert leak not in text, f"{leak!r} leaked in {text!r}"


CASES = [("500", "upstream_error", 500), ("401", "upstream_error", 401),
         ("error-event", "upstream_error", None), ("malformed", "upstream_error", None)]


@pytest.mark.parametrize(("prompt", "code", "status"), CASES)
def test_an_upstream_failure_gives_a_stable_code_and_a_generic_message(upstream, prompt, code, status,
                                                                      caplog):
    engine = _engine(upstream)
    try:
        with caplog.at_level(logging.WARNING, logger="inference_worker.engines.upstream"):
            error = _error_of(engine, prompt)
    finally:
        engine.close()
    assert (error.code, getattr(error, "status", None)) == (code, status)
    _assert_clean(str(error), upstream)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert SECRET in logged and upstream in logged  # the operator still sees what went wrong
    assert API_KEY not in logged


def test_an_unreachable_upstream_names_no_address(caplog):
    base_url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    engine = _engine(base_url)
    try:
        with caplog.at_level(logging.WARNING, logger="inference_worker.engines.upstream"):
            error = _error_of(engine, "hello")
    finally:
        engine.close()
    assert error.code == "upstream_unavailable"
    _assert_clean(str(error), base_url)
    assert base_url in "\n".join(r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("prompt", ["500", "401", "error-event", "unreachable"])
def test_the_event_and_the_v1_body_of_a_failed_upstream_leak_nothing(upstream, prompt, settings):
    """The worker's terminal event (what the event log carries to the gateway) and the
    /v1 error body the gateway renders from it."""
    base_url = f"http://127.0.0.1:{free_port()}/v1" if prompt == "unreachable" else upstream
    model = f"sec-up-{uuid.uuid4().hex[:6]}"
    settings.INFERENCE_MODELS = {model: {
        "engine": "upstream", "base_url": base_url, "model": "up", "api_key": API_KEY,
        "connect_timeout": 2.0, "read_timeout": 5.0, "connect_retries": 0}}
    backend = InProcessBackend(MemoryEventLog())
    request = GenerationRequest(request_id=uuid.uuid4().hex, model=model, priority="free",
                                messages=[{"role": "user", "content": prompt}], max_tokens=8)
    backend.submit(request)
    event = backend.result(request.request_id, timeout_s=20)
    assert event["type"] == "error"
    assert event["code"] == ("upstream_unavailable" if prompt == "unreachable" else "upstream_error")
    _assert_clean(json.dumps(event), base_url)
    status, body = error_status(event)
    assert status >= 500 and body["error"]["code"] == event["code"]
    _assert_clean(json.dumps(body), base_url)
