"""One webhook POST, to the addresses its URL check passed (DNS rebinding: the
name is never resolved again between the check and the connection), within a
total deadline and a cap on the bytes read of the answer.

httpcore's pool with a network backend of ours: it connects to the checked
addresses while the request keeps the URL's host (the Host header, and the TLS
server name that the certificate is verified against)."""

from __future__ import annotations

import time

import httpcore
import httpx

from .urlcheck import IPAddress


class AttemptTimeout(httpcore.TimeoutException):
    """The attempt ran past its total deadline."""


class AnswerTooLarge(httpcore.ReadError):
    """The receiver's answer ran past the bytes an attempt reads."""


# What a failed attempt raises: a network, timeout or protocol error of httpcore.
SEND_ERRORS = (httpcore.NetworkError, httpcore.TimeoutException, httpcore.ProtocolError)


class _Limits:
    """The deadline and the byte budget of one attempt, shared by its streams."""

    def __init__(self, total_s: float, max_bytes: int):
        self.total_s = total_s
        self.deadline = time.monotonic() + total_s
        self.max_bytes = max_bytes
        self.bytes_left = max_bytes

    def timeout(self, timeout: float | None) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise AttemptTimeout(f"the attempt took over {self.total_s:g} s")
        return left if timeout is None else min(timeout, left)

    def run(self, operation, timeout: float | None, *args):
        """`operation(*args, timeout)` with the timeout cut to the deadline; a timeout
        once the deadline has passed says so."""
        try:
            return operation(*args, self.timeout(timeout))
        except httpcore.TimeoutException:
            self.timeout(None)  # raises AttemptTimeout when it was the deadline
            raise


class _LimitedStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream, limits: _Limits):
        self._stream = stream
        self._limits = limits

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        limits = self._limits
        if limits.bytes_left <= 0:
            raise AnswerTooLarge(f"the answer is over {limits.max_bytes} bytes")
        data = limits.run(self._stream.read, timeout, min(max_bytes, limits.bytes_left))
        limits.bytes_left -= len(data)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._limits.run(self._stream.write, timeout, buffer)

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        tls = self._limits.run(self._stream.start_tls, timeout, ssl_context, server_hostname)
        return _LimitedStream(tls, self._limits)

    def get_extra_info(self, info: str):
        return self._stream.get_extra_info(info)


class _PinnedBackend(httpcore.NetworkBackend):
    """Connects to the checked addresses (in order, the first that answers),
    whatever host the request names."""

    def __init__(self, addresses: list[IPAddress], limits: _Limits):
        self._addresses = addresses
        self._limits = limits
        self._backend = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None, socket_options=None) -> httpcore.NetworkStream:
        error: Exception = httpcore.ConnectError(f"{host} has no address")
        for address in self._addresses:
            try:
                stream = self._limits.run(self._connect, timeout, str(address), port, local_address,
                                          socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
                continue
            return _LimitedStream(stream, self._limits)
        raise error

    def _connect(self, address, port, local_address, socket_options, timeout):
        return self._backend.connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                         socket_options=socket_options)


def post(url: str, *, addresses: list[IPAddress], headers: dict[str, str], body: bytes,
         timeout_s: float, total_s: float, max_response_bytes: int) -> int:
    """The status code of the answer to one POST of `body` to `url`, connecting to
    `addresses` only; raises one of SEND_ERRORS. The answer's body is not read."""
    limits = _Limits(total_s, max_response_bytes)
    timeouts = {"connect": timeout_s, "read": timeout_s, "write": timeout_s, "pool": timeout_s}
    with httpcore.ConnectionPool(ssl_context=httpx.create_ssl_context(), max_connections=1,
                                 network_backend=_PinnedBackend(addresses, limits)) as pool, \
            pool.stream("POST", url, headers=headers, content=body,
                        extensions={"timeout": timeouts}) as response:
        return response.status
