"""`manage.py serve --workers 2`: each process listens on a socket of its own on
the shared port (SO_REUSEPORT), so connections spread over both, and SIGTERM
stops them all."""

import os
import signal
import socket

import psutil
import pytest

from tests.livesubprocess import embedded_env, free_port, running_server
from tests.polling import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.any_profile]  # its own embedded server either way

CONNECTIONS = 40


def _listeners(server_pid: int, port: int) -> list[tuple[str, int]]:
    """Per process listening on ``port`` (not the supervisor's other children): its
    listening socket (the kernel's socket:[inode]) and its connections to the port."""
    found = []
    for child in psutil.Process(server_pid).children(recursive=True):
        connections = child.net_connections("tcp")
        listening = [c for c in connections if c.status == psutil.CONN_LISTEN and c.laddr.port == port]
        if listening:
            established = sum(1 for c in connections if c.status == psutil.CONN_ESTABLISHED
                              and c.laddr.port == port)
            found.append((os.readlink(f"/proc/{child.pid}/fd/{listening[0].fd}"), established))
    return found


def test_two_serve_processes_share_the_port_and_its_connections(tmp_path):
    port = free_port()
    env = embedded_env(tmp_path)
    with running_server(["manage.py", "serve", "--no-demo", "--port", str(port), "--workers", "2"],
                        env, port) as server:
        # Both listening (the server answers once the first does; on a loaded machine
        # the second may still be starting, and the kernel gives a burst to the one alone).
        wait_for(lambda: len(_listeners(server.proc.pid, port)) == 2, what="both processes listening")
        # A burst, as a load generator opens its connections: the kernel completes
        # them all before either process accepts one.
        clients = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(CONNECTIONS)]
        try:
            for client in clients:
                client.sendall(b"GET /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answers = [client.recv(64) for client in clients]
            assert all(a.startswith(b"HTTP/1.1 200") for a in answers), answers[:3]
            listeners = _listeners(server.proc.pid, port)
        finally:
            for client in clients:
                client.close()
        sockets, per_process = zip(*listeners, strict=True)
        # Two sockets, not one shared: the kernel spreads connections over them (under
        # load, one shared socket let one process take most: bench/ceiling.py).
        assert len(set(sockets)) == 2, listeners
        assert sum(per_process) == CONNECTIONS and min(per_process) >= 5, listeners
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(30) in (0, -signal.SIGTERM), server.output()
