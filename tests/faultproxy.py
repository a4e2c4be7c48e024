"""An asyncio TCP proxy that misbehaves like a network: latency on every chunk
(both ways, order kept), a connection stalled on command (nothing forwarded either
way, nothing closed), and a connection cut mid-frame (half of the next chunk goes
through, then both sides are reset). Connections are named by the client's port."""

from __future__ import annotations

import asyncio
import random


class _Link:
    def __init__(self, client_writer, server_writer):
        self.writers = (client_writer, server_writer)
        self.stalled = asyncio.Event()
        self.cut_next = False
        self.cut_done = False
        self.closed = False

    def abort(self) -> None:
        self.closed = True
        for w in self.writers:
            w.transport.abort()


class FaultProxy:
    def __init__(self, target_port: int, *, latency: float = 0.01):
        self.target_port, self.latency = target_port, latency
        self.links: dict[int, _Link] = {}
        self.stalls = 0
        self._armed: list[_Link] = []  # the links a cut was armed on, in order

    @property
    def cuts(self) -> int:
        """Cuts armed."""
        return len(self._armed)

    @property
    def cuts_done(self) -> int:
        """Cuts that happened (a cut is armed, then hits the link's next chunk)."""
        return sum(1 for link in self._armed if link.cut_done)

    def cuts_missed(self) -> int:
        """Armed cuts whose connection closed before a chunk went through it (the
        client gave up on it first): they never happen."""
        return sum(1 for link in self._armed if link.closed and not link.cut_done)

    async def __aenter__(self):
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc):
        self._server.close()
        for link in list(self.links.values()):
            link.abort()

    def stall(self, client_port: int) -> bool:
        link = self.links.get(client_port)
        if link is None or link.closed or link.stalled.is_set() or link.cut_next:
            return False  # a stalled link forwards nothing: a cut armed on it would never happen
        link.stalled.set()
        self.stalls += 1
        return True

    def cut_mid_frame(self, client_port: int) -> bool:
        link = self.links.get(client_port)
        if link is None or link.closed or link.stalled.is_set() or link.cut_next:
            return False
        link.cut_next = True
        self._armed.append(link)
        return True

    async def _accept(self, client_reader, client_writer):
        port = client_writer.get_extra_info("peername")[1]
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            client_writer.transport.abort()
            return
        link = self.links[port] = _Link(client_writer, server_writer)
        try:
            await asyncio.gather(self._pipe(link, client_reader, server_writer),
                                 self._pipe(link, server_reader, client_writer), return_exceptions=True)
        except asyncio.CancelledError:
            pass  # the proxy is closing
        link.abort()

    async def _pipe(self, link: _Link, reader, writer) -> None:
        # A delay line: chunks are read at once and written `latency` later, in order.
        line: asyncio.Queue = asyncio.Queue()
        loop = asyncio.get_running_loop()

        async def deliver():
            while True:
                due, data = await line.get()
                if data is None:
                    return
                await asyncio.sleep(max(0.0, due - loop.time()))
                if link.stalled.is_set():
                    await asyncio.Future()  # held forever; the connection stays open
                if link.cut_next:
                    writer.write(data[: random.randrange(len(data))])  # part of a frame
                    await writer.drain()
                    link.cut_done = True
                    link.abort()
                    return
                writer.write(data)
                await writer.drain()

        task = asyncio.create_task(deliver())
        try:
            while not link.closed:
                data = await reader.read(65536)
                line.put_nowait((loop.time() + self.latency, data or None))
                if not data:
                    break
            await task
        finally:
            task.cancel()
            if not link.stalled.is_set():
                link.abort()
