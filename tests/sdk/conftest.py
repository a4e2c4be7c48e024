"""The live stack for SDK tests: uvicorn on the test database and a Celery
worker (fixed-cost engine: the answer is the last message reversed), those of
the export suite, plus an HTTP proxy in front of the server that can answer
502 or hang (what a load balancer does when the app is down or slow)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

# The export suite's live stack (uvicorn + a Celery worker on its own model),
# shared: one server and one worker for both suites in a run.
from tests.export.conftest import MODEL, MODELS, export_server, export_worker  # noqa: F401
from tests.inference_client.conftest import usage_settled, wait_for_worker


class ManualClock:
    """The SDK's clock in tests: time moves only when the test says so."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class FaultProxy:
    """Forwards to the live server (mode "pass"), or answers every request with
    a 502 HTML page (mode "502"), or holds it without answering (mode "hang",
    until the test ends or the mode changes)."""

    def __init__(self, target: str):
        self.target = target
        self.mode = "pass"
        self.requests = 0
        self._release = threading.Event()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self):
                proxy.requests += 1
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if proxy.mode == "hang":
                    proxy._release.wait(30)
                if proxy.mode in ("502", "hang"):
                    page = b"<html><body>502 Bad Gateway</body></html>"
                    self.send_response(502)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(page)))
                    self.end_headers()
                    self.wfile.write(page)
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                upstream = httpx.request(self.command, proxy.target + self.path, headers=headers,
                                         content=raw, timeout=30)
                self.send_response(upstream.status_code)
                for k, v in upstream.headers.items():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length",
                                         "content-encoding"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(upstream.content)))
                self.end_headers()
                self.wfile.write(upstream.content)

            do_GET = do_POST = do_DELETE = _handle

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def set(self, mode: str) -> None:
        self.mode = mode
        if mode != "hang":
            self._release.set()
            self._release = threading.Event()

    def close(self) -> None:
        self.set("pass")
        self.server.shutdown()




@pytest.fixture(scope="session")
def sdk_server(export_server):  # noqa: F811
    return export_server


@pytest.fixture(scope="session")
def sdk_worker(export_worker):  # noqa: F811
    return export_worker


@pytest.fixture
def live(sdk_server, transactional_db, settings):
    settings.INFERENCE_MODELS = MODELS
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    yield sdk_server
    # The server stores a run's usage record after it answered: not while the flush runs
    # ("deadlock detected" in the flush after a test whose last act was a run).
    usage_settled()


@pytest.fixture
def worker(sdk_worker, live):
    wait_for_worker(MODEL)  # its heartbeat is back after the per-test Redis flush
    return sdk_worker


@pytest.fixture
def proxy(live):
    p = FaultProxy(live)
    yield p
    p.close()


@pytest.fixture
def clock():
    return ManualClock()
