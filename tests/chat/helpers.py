"""Helpers for chat consumer tests: a connected WebsocketCommunicator per user."""

import asyncio
import json

from channels.testing import WebsocketCommunicator

from config.asgi import application

ORIGIN = (b"origin", b"http://127.0.0.1")


def bearer(raw_key: str) -> tuple[bytes, bytes]:
    return (b"authorization", f"Bearer {raw_key}".encode())


async def connect(raw_key: str, *, hello: dict | None = None) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(application, "/ws/chat/", headers=[ORIGIN, bearer(raw_key)])
    connected, _ = await comm.connect(timeout=10)
    assert connected
    welcome = await recv_type(comm, "welcome")
    assert welcome["heartbeat_seconds"] > 0
    if hello is not None:
        await comm.send_json_to({"type": "hello", **hello})
    return comm


async def recv(comm, timeout: float = 5) -> dict:
    return json.loads(await comm.receive_from(timeout=timeout))


async def recv_type(comm, kind: str, timeout: float = 5) -> dict:
    """Next frame of this type, skipping others (presence, echo...)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        frame = await recv(comm, max(0.05, deadline - loop.time()))
        if frame["type"] == kind:
            return frame


async def collect_until_synced(comm) -> list[dict]:
    frames = []
    while True:
        frame = await recv(comm)
        if frame["type"] == "synced":
            return frames
        if frame["type"] == "message":
            frames.append(frame)


async def send_message(comm, to: int, client_msg_id: str, body: str) -> dict:
    await comm.send_json_to({"type": "send", "to": to, "client_msg_id": client_msg_id, "body": body})
    while True:
        frame = await recv(comm)
        if frame["type"] in ("sent", "error"):
            return frame
