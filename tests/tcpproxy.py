"""A TCP proxy for fault tests: forwards to a real server until told to cut,
then drops every connection and refuses new ones until restored (the server
"went away" as its clients see it, while the server itself keeps running for
everyone else). Told to swallow, it takes what clients send and forwards none
of it: bytes a link loses as it breaks."""

from __future__ import annotations

import socket
import threading


class TcpProxy:
    def __init__(self, target_host: str, target_port: int):
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._cut = False
        self._swallow = False
        self.swallowed = 0  # bytes taken from clients and not forwarded
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            conns, self._open = list(self._open), set()
        for conn in conns:
            _close(conn)

    def restore(self) -> None:
        with self._lock:
            self._cut = self._swallow = False

    def swallow(self) -> None:
        """From now on, forward nothing clients send (until restored)."""
        with self._lock:
            self._swallow = True

    def close(self) -> None:
        self.cut()
        _close(self._listener)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                refuse = self._cut
            if refuse:
                _close(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=2)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._open.update((client, upstream))
            for a, b, outbound in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._pump, args=(a, b, outbound), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, outbound: bool) -> None:
        try:
            while data := src.recv(65536):
                if outbound and self._swallow:
                    self.swallowed += len(data)
                    continue
                dst.sendall(data)
        except OSError:
            pass
        finally:
            _close(src)
            _close(dst)
            with self._lock:
                self._open.discard(src)
                self._open.discard(dst)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
