"""The HTTP protocol `serve` runs (settings.SERVE_HTTP_PROTOCOL): uvicorn's httptools
protocol, asking the refusal gate (config.asgi.refusal_gate, inference_client/refusals.py)
once a request's headers are in, before the request gets an ASGI task.

A refused key's flood cost a serve process mostly uvicorn's own work per request: the
task, the ASGI messages and their checks, two writes (py-spy of `bench/ceiling.py
--flood`; the gate itself was ~8%). Answered here, a refusal is the parse, the gate's
look-up and one write. The request's body, if any, is read and dropped; the connection
stays open for the next request as after any answer, unless the request asked to close
it (or is HTTP/1.0). A request behind another still in flight on its connection (HTTP
pipelining) takes the ASGI path, where the gate answers it too, so answers keep their
order. Percent-encoded paths take it as well (the gate there sees them decoded).
"""

from __future__ import annotations

import asyncio
import functools

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

CLOSE = (b"connection", b"close")


class _Answered:
    """The cycle of a request answered here: complete, so uvicorn drops its body."""

    response_complete = True
    message_event = asyncio.Event()  # set by uvicorn when the connection goes


ANSWERED = _Answered()


@functools.cache
def _gate():
    from config.asgi import refusal_gate  # the served app's own (loaded before any request)

    return refusal_gate


class GatedHttpToolsProtocol(HttpToolsProtocol):
    def on_headers_complete(self) -> None:
        # Only a POST can be refused, only while some key is remembered, and only with
        # nothing ahead of it on the connection; otherwise uvicorn's own path, unchanged.
        gate = _gate()
        if (self.parser.get_method() == b"POST" and len(gate.memory)
                and (self.cycle is None or self.cycle.response_complete)):
            path = self.root_path + httptools.parse_url(self.url).path.decode("latin-1")
            answer = gate.answer("POST", path, self.headers)
            if answer is not None:
                self._answer(*answer)
                return
        super().on_headers_complete()

    def _answer(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        close = self.parser.get_http_version() == "1.0" or CLOSE in self.headers
        lines = [STATUS_LINE[status]]
        for name, value in [*self.server_state.default_headers, *headers, *([CLOSE] if close else [])]:
            lines += (name, b": ", value, b"\r\n")
        lines += (b"\r\n", body)
        self.transport.write(b"".join(lines))
        self.cycle = ANSWERED  # type: ignore[assignment]
        if close:
            self.transport.close()
        self.on_response_complete()
