"""UpstreamEngine against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from inference_worker.engines import build_engine
from inference_worker.engines.base import EngineError, SamplingParams, Sequence
from inference_worker.engines.upstream import (
    UpstreamEngine,
    UpstreamError,
    UpstreamRateLimited,
    UpstreamUnavailable,
    parse_retry_after,
)

# Touches no part the two profiles differ in: runs once, in the services pass.
pytestmark = pytest.mark.any_profile


class Handler(BaseHTTPRequestHandler):
    """Streams the words of the reply one chunk each. The last user message
    picks the behaviour: "ratelimit", "boom" (500), "slow", "multiline" (each
    event's JSON spread over several data: lines, as SSE allows), else echo."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep test output clean
        pass

    def do_GET(self):
        if self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": "up-model", "object": "model"}]})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(body)
        prompt = body["messages"][-1]["content"]
        if prompt == "ratelimit":
            self._json(429, {"error": {"message": "slow down"}}, {"Retry-After": "7"})
            return
        if prompt == "boom":
            self._json(500, {"error": {"message": "internal"}})
            return
        words = f"you said {prompt} and that is all".split()
        n = min(len(words), body.get("max_tokens", 100))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i, w in enumerate(words[:n]):
            self._event({"choices": [{"index": 0, "delta": {"content": (" " if i else "") + w},
                                      "finish_reason": None}]})
            if prompt == "slow":
                time.sleep(0.05)
        self._event({"choices": [{"index": 0, "delta": {},
                                  "finish_reason": "length" if n < len(words) else "stop"}]})
        self._event({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": n,
                                              "total_tokens": 5 + n}})
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _event(self, obj):
        if self.server.requests[-1]["messages"][-1]["content"] == "multiline":
            lines = json.dumps(obj, indent=1).splitlines()
            self._chunk(b"".join(b"data: " + line.encode() + b"\n" for line in lines) + b"\n")
        else:
            self._chunk(b"data: " + json.dumps(obj).encode() + b"\n\n")

    def _chunk(self, data: bytes):
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _json(self, status, obj, headers=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


def start_server(port=0):
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.requests = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def server():
    s = start_server()
    yield s
    s.shutdown()
    s.server_close()


def make_engine(port, **kw):
    kw.setdefault("connect_timeout", 2.0)
    kw.setdefault("read_timeout", 5.0)
    return UpstreamEngine(base_url=f"http://127.0.0.1:{port}/v1", model="up-model", **kw)


def seq(i, prompt, **params):
    return Sequence(id=f"u{i}", messages=[{"role": "user", "content": prompt}],
                    params=SamplingParams(**params))


def drive(engine, seqs, timeout=10.0):
    out = {s.id: ["", None] for s in seqs}
    running, new = [], list(seqs)
    deadline = time.monotonic() + timeout
    while running or new:
        assert time.monotonic() < deadline
        results = engine.step(running, new)
        running = [s for s in running + new]
        new = []
        for r in results:
            out[r.seq_id][0] += r.text
            if r.finished:
                out[r.seq_id][1] = r.finish_reason
                engine.release(r.seq_id)
                running = [s for s in running if s.id != r.seq_id]
    return {k: tuple(v) for k, v in out.items()}


def step_until_error(eng, s, timeout=5.0):
    eng.step([], [s])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        eng.step([s], [])
    raise AssertionError("no error within the timeout")


def test_streams_several_sequences_and_passes_params(server):
    eng = make_engine(server.server_port)
    seqs = [seq(0, "slow", temperature=0.0, seed=3, stop=("zzz",)), seq(1, "hi"),
            seq(2, "long one", max_tokens=3)]
    out = drive(eng, seqs)
    assert out["u0"] == ("you said slow and that is all", "stop")
    assert out["u1"] == ("you said hi and that is all", "stop")
    assert out["u2"] == ("you said long", "length")
    assert seqs[0].meta["usage"]["completion_tokens"] == 7
    sent = {r["messages"][-1]["content"]: r for r in server.requests}
    assert sent["slow"]["stream"] is True and sent["slow"]["model"] == "up-model"
    assert sent["slow"]["seed"] == 3 and sent["slow"]["stop"] == ["zzz"]
    assert sent["slow"]["temperature"] == 0.0
    assert sent["long one"]["max_tokens"] == 3
    assert eng.health()


def test_slow_stream_arrives_over_several_steps(server):
    eng = make_engine(server.server_port, poll_s=0.02)
    s = seq(0, "slow")
    steps, text = 0, ""
    running, new = [], [s]
    while True:
        (r,) = eng.step(running, new)
        running, new = [s], []
        steps += 1
        text += r.text
        if r.finished:
            break
    assert text == "you said slow and that is all"
    assert steps > 2  # deltas were handed out as they came, not at the end


def test_429_surfaces_retry_after_without_losing_other_streams(server):
    eng = make_engine(server.server_port)
    ok, limited = seq(0, "hi"), seq(1, "ratelimit")
    running, new = [], [ok, limited]
    text, deadline = "", time.monotonic() + 5
    with pytest.raises(UpstreamRateLimited) as e:
        while time.monotonic() < deadline:
            text += eng.step(running, new)[0].text
            running, new = [ok, limited], []
            time.sleep(0.05)
    assert e.value.retry_after == 7.0 and e.value.status == 429
    assert isinstance(e.value, EngineError) and e.value.code == "upstream_rate_limited"
    assert sum(r["messages"][-1]["content"] == "ratelimit" for r in server.requests) == 1
    # The scheduler isolates the failed one; the other still gets all its text.
    eng.release(limited.id)
    while True:
        (r,) = eng.step([ok], [])
        text += r.text
        if r.finished:
            break
    assert text == "you said hi and that is all"


def test_server_errors_are_not_retried(server):
    eng = make_engine(server.server_port)
    s = seq(0, "boom")
    with pytest.raises(UpstreamError) as e:
        step_until_error(eng, s)
    assert e.value.status == 500
    assert len(server.requests) == 1


def test_connection_errors_are_retried_until_the_server_is_up():
    with socket.socket() as probe:  # a port that is free now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    eng = make_engine(port, connect_retries=5)
    s = seq(0, "hi")
    (r,) = eng.step([], [s])
    assert r.text == "" and not r.finished
    server = start_server(port)  # comes up during the retries (httpx backs off 0, 0.5, 1, 2 s)
    try:
        text, deadline = "", time.monotonic() + 5
        while time.monotonic() < deadline:
            (r,) = eng.step([s], [])
            text += r.text
            if r.finished:
                break
        assert text == "you said hi and that is all"
    finally:
        server.shutdown()
        server.server_close()


def test_unreachable_upstream_fails_after_retries(caplog):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    eng = make_engine(port, connect_retries=2)
    s = seq(0, "hi")
    with pytest.raises(UpstreamUnavailable, match="unreachable"):
        step_until_error(eng, s)
    assert "after 3 attempts" in caplog.text  # the detail is the worker's log, not the client's
    assert not eng.health()


def test_retry_after_forms():
    assert parse_retry_after("12") == 12.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 <= parse_retry_after(date) <= 31


def test_registry_and_bad_input(server):
    eng = build_engine("proxied", {"engine": "upstream",
                                   "base_url": f"http://127.0.0.1:{server.server_port}/v1"})
    assert eng.model_name == "proxied"
    with pytest.raises(EngineError) as e:
        eng.prepare(Sequence(id="x", messages=[]))
    assert e.value.code == "invalid_messages"
    with pytest.raises(EngineError, match="no option"):
        build_engine("x", {"engine": "upstream", "base_url": "http://x", "bogus": 1})
    with pytest.raises(EngineError, match="unknown engine"):
        build_engine("x", {"engine": "nope"})
    with pytest.raises(EngineError, match="cannot import engine"):
        build_engine("x", {"engine": "no_such_module:Engine"})
    with pytest.raises(EngineError, match="not an Engine subclass"):
        build_engine("x", {"engine": "json:JSONDecoder"})
    plugin = build_engine("p", {"engine": "inference_worker.engines.fixed_cost:FixedCostEngine"})
    assert plugin.model_name == "p"
    fixed = build_engine("sim", {"engine": "fixed_cost", "max_inputs": 4, "call_s": 0})
    assert fixed.model_name == "sim" and fixed.capacity.fixed_batch


def test_release_mid_stream_closes_the_upstream_request(server):
    eng = make_engine(server.server_port)
    s = seq(0, "slow")
    eng.step([], [s])
    stream = eng._streams[s.id]
    deadline = time.monotonic() + 5
    while stream.response is None and time.monotonic() < deadline:
        eng.step([s], [])
    eng.release(s.id)
    stream.thread.join(timeout=2)
    assert not stream.thread.is_alive()
    assert stream.error is None and not stream.done
    eng.close()


def test_an_event_whose_data_spans_several_lines_is_one_chunk(server):
    eng = make_engine(server.server_port)
    assert drive(eng, [seq(0, "multiline")])["u0"] == ("you said multiline and that is all", "stop")


def test_the_upstreams_usage_is_the_results_usage(server, settings):
    """Prompt and completion tokens come from the upstream's own count, so the
    usage record and the token settlement are exact (the server says 5 + 7)."""
    from inference_protocol.events import MemoryEventLog
    from inference_protocol.generation import GenerationRequest
    from inference_worker.generation import run_generation
    from inference_worker.runtime import loaded_schedulers

    settings.INFERENCE_MODELS = {"up-usage": {"engine": "upstream", "model": "up-model",
                                              "base_url": f"http://127.0.0.1:{server.server_port}/v1"}}
    try:
        done = run_generation(GenerationRequest(request_id="usage-1", model="up-usage", seed=1,
                                                messages=[{"role": "user", "content": "hi"}]),
                              MemoryEventLog())
    finally:
        loaded_schedulers()["up-usage"].stop()
    assert done["type"] == "done", done
    result = done["result"]
    assert result["text"] == "you said hi and that is all"
    assert (result["prompt_tokens"], result["completion_tokens"]) == (5, 7)
