"""A real HTTP receiver for webhook tests: records every POST (monotonic and
wall time, headers, body) and answers with the next status of its script (then the last one again)."""

from __future__ import annotations

import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Receiver:
    def __init__(self, statuses=(200,), host: str = "127.0.0.1", port: int = 0, tls=None):
        """`tls`: a server SSLContext, for an https receiver."""
        self.statuses = list(statuses)
        self.received: list[dict] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    receiver.received.append({"at": time.monotonic(), "wall": time.time(), "path": self.path,
                                              "headers": dict(self.headers), "body": body})
                    status = receiver.statuses.pop(0) if len(receiver.statuses) > 1 else receiver.statuses[0]
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.url = f"{'https' if tls else 'http'}://{host}:{self.port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def script(self, *statuses: int) -> None:
        with self._lock:
            self.statuses = list(statuses)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def readme_verifier():
    """The verification snippet of docs/webhooks.md, as documented, exec'd: whether a
    delivery (secret, headers, body) checks out."""
    text = (ROOT / "docs" / "webhooks.md").read_text()
    code = re.search(r"```python\n# promptyard-webhook-verify\n(.*?)```", text, re.S).group(1)
    scope: dict = {}
    exec(code, scope)  # noqa: S102 - our own docs
    receive = scope["receive_promptyard_webhook"]
    return lambda secret, headers, body: receive(body, headers, secret) is not None
