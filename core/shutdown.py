"""Graceful shutdown: what a process does between SIGTERM and its exit.

- ``stopping`` is set as the process starts to stop (``serve``'s SIGTERM, a job
  worker's): job drivers let their lease go after the step they are in, so
  another driver takes the job at once (core.jobs), and ``pause`` ends early.
- ``serve`` (``GracefulServer``) stops accepting at once, answers each request
  in flight and lets each stream run until ``SHUTDOWN_GRACE_S`` has passed, then
  runs the hooks registered with ``at_deadline``: the gateway ends every
  generation still open with a terminal ``server_shutting_down`` error (a
  stream's last frame; inference_client.completion). uvicorn closes websockets
  at once with 1012 (service restart), on which the chat pages reconnect.
  Whatever is left ``DEADLINE_HOOKS_S`` later is cancelled, and the process exits.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import threading
from collections.abc import Awaitable, Callable

import uvicorn

logger = logging.getLogger(__name__)

stopping = threading.Event()  # the process is stopping
deadline_passed = threading.Event()  # the grace is over: what is still open ends now
DEADLINE_HOOKS_S = 3.0  # how long the hooks' endings get to reach their clients

_hooks: list[Callable[[], Awaitable[None]]] = []


def at_deadline(hook: Callable[[], Awaitable[None]]) -> None:
    """Run ``hook`` on serve's event loop when the grace is over (once per process)."""
    if hook not in _hooks:
        _hooks.append(hook)


async def run_deadline_hooks() -> None:
    deadline_passed.set()
    for hook in list(_hooks):
        try:
            await hook()
        except Exception:
            logger.exception("shutdown hook %r failed", hook)


def pause(seconds: float) -> None:
    """Sleep, ending early once the process is stopping."""
    if seconds > 0:
        stopping.wait(seconds)


def stop_on_sigterm() -> None:
    """For a process whose main loop watches ``stopping`` (the job workers,
    ``deploy``); only its main thread can set a handler (a command called elsewhere sets none)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: stopping.set())


class GracefulServer(uvicorn.Server):
    """uvicorn's server, with the grace and its deadline hooks (module docstring)."""

    def __init__(self, config: uvicorn.Config, grace_s: float):
        super().__init__(config)
        self.grace_s = grace_s

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        stopping.set()
        logger.info("stopping: in-flight requests have %.1f s to finish", self.grace_s)
        loop = asyncio.get_running_loop()
        ending: list[asyncio.Task[None]] = []
        timer = loop.call_later(self.grace_s, lambda: ending.append(loop.create_task(run_deadline_hooks())))
        try:
            await super().shutdown(sockets)
        finally:
            timer.cancel()
            for task in ending:
                await task
