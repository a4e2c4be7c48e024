"""A completion in flight: its events, fanned out to whoever renders them, and
the bookkeeping when it ends (usage record, token-charge correction, cache).

A pump task reads the generation's event log and keeps every event; it runs
apart from the HTTP request's task, so a client that goes away (a cancelled
view) does not skip the bookkeeping. Only the request that submitted the
generation (the owner) does the bookkeeping; retries attached through an
Idempotency-Key only read.

A stopping server (core.shutdown) lets each open completion run until the
grace is over, then ends it with a terminal ``server_shutting_down`` error (the
stream's last frame, or the answer) and cancels its generation, unless a retry
was promised the result (Idempotency-Key).
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

from core import shutdown
from inference_client.metrics import ITL
from inference_protocol.backend import get_backend

logger = logging.getLogger(__name__)

_background: set[asyncio.Task] = set()
_open: dict[int, Completion] = {}  # id -> a completion whose pump waits for its terminal event
SHUTTING_DOWN = {"type": "error", "code": "server_shutting_down", "retry_after": 1,
                 "message": "This server is shutting down before the generation ended; retry: another "
                            "server answers (with the same Idempotency-Key, the same generation)."}


async def _end_open() -> None:
    """At the shutdown deadline: every completion still open ends (module docstring)."""
    for completion in list(_open.values()):
        completion.interrupt()


shutdown.at_deadline(_end_open)


def spawn(coro: Coroutine[Any, Any, Any]) -> asyncio.Task:
    """A task that outlives the request (kept referenced until it ends). It
    runs in a fresh context: the request's context names asgiref's per-request
    executor, which is gone once the response is sent."""
    task = asyncio.get_running_loop().create_task(coro, context=contextvars.Context())
    _background.add(task)
    task.add_done_callback(_background.discard)
    return task


def read_events(request_id: str, *, timeout_s: float, attached: bool = False) -> AsyncIterator[dict]:
    return get_backend().aevents(request_id, timeout_s=timeout_s, attached=attached)


@dataclasses.dataclass
class Completion:
    id: str
    request_id: str
    model: str
    created: int
    cache_hit: str = ""                 # "", "exact", "semantic"
    attached: bool = False              # a retry reading an earlier request's generation
    headers: dict = dataclasses.field(default_factory=dict)
    include_usage: bool = False
    keep_on_disconnect: bool = False    # Idempotency-Key: a retry will want the result
    kind: str = "chat"                  # "chat" (chat.completion) or "text" (text_completion)
    n: int = 1
    logprobs: bool = False              # render the logprobs the events carry
    echo: str | None = None             # /v1/completions echo: the prompt before the text
    tools: bool = False                 # the reply may be tool calls (inference_protocol.tools)
    started: float = dataclasses.field(default_factory=time.monotonic)
    first_token_at: float | None = None
    ended_at: float | None = None       # when the terminal event reached this process
    # Milliseconds per gateway stage (inference_client.stages), for Server-Timing.
    timings: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        self._events: list[dict] = []
        self._last_token_at: float | None = None
        self._changed = asyncio.Event()
        self._task: asyncio.Task | None = None

    def _push(self, event: dict) -> None:
        if event["type"] == "token":
            now = time.monotonic()
            if self.first_token_at is None:
                self.first_token_at = now
            elif self._last_token_at is not None:
                ITL.labels(self.model).observe(now - self._last_token_at)
            self._last_token_at = now
        else:
            self.ended_at = time.monotonic()
        self._events.append(event)
        self._changed.set()

    def start(self, source: AsyncIterator[dict],
              on_end: Callable[[Completion, dict], Awaitable[None]] | None = None) -> Completion:
        async def pump():
            terminal = {"type": "error", "code": "gateway_error", "message": "the event stream broke"}
            _open[id(self)] = self
            try:
                if shutdown.deadline_passed.is_set():
                    raise asyncio.CancelledError
                async for event in source:
                    if event["type"] != "token":
                        terminal = event
                        break
                    self._push(event)
            except asyncio.CancelledError:
                if not shutdown.deadline_passed.is_set():
                    raise
                current = asyncio.current_task()
                if current is not None:
                    current.uncancel()  # handled: the pump goes on to its ending
                try:
                    await self.client_gone()  # the generation stops, unless a retry wants it
                except Exception as exc:
                    logger.warning("cancelling %s failed: %r", self.request_id, exc)
                terminal = SHUTTING_DOWN
            except Exception as exc:  # Redis away mid-generation: a clear 503, the client may retry
                logger.warning("reading the events of %s failed: %r", self.request_id, exc)
                terminal = {"type": "error", "code": "events_unavailable",
                            "message": f"The event log is unavailable ({type(exc).__name__}); retry "
                                       "with the same Idempotency-Key to get the result."}
            finally:
                _open.pop(id(self), None)
            self._push(terminal)
            if on_end is not None:
                # The waiting view first: it answers the client before the bookkeeping runs.
                await asyncio.sleep(0)
                try:
                    await on_end(self, terminal)
                except Exception:
                    logger.exception("bookkeeping of %s failed", self.request_id)

        self._task = spawn(pump())
        return self

    def interrupt(self) -> None:
        """End the pump now (at the shutdown deadline): its terminal event is SHUTTING_DOWN."""
        if self._task is not None and self.ended_at is None:
            self._task.cancel()

    def preload(self, events: list[dict]) -> Completion:
        for event in events:
            self._push(event)
        return self

    async def events(self) -> AsyncIterator[dict]:
        """Every event from the first, then live ones, ending with the terminal one."""
        index = 0
        while True:
            while index < len(self._events):
                event = self._events[index]
                index += 1
                yield event
                if event["type"] != "token":
                    return
            self._changed.clear()
            if index >= len(self._events):
                await self._changed.wait()

    async def final(self) -> dict:
        async for event in self.events():
            if event["type"] != "token":
                return event
        raise RuntimeError("no terminal event")

    async def client_gone(self) -> None:
        """The client disconnected mid-stream: stop the generation, unless an
        Idempotency-Key promised the result to a retry."""
        if self.keep_on_disconnect or self.attached or self.cache_hit:
            return
        if self._events and self._events[-1]["type"] != "token":
            return
        await get_backend().acancel(self.request_id)

    def server_timing(self, result: dict | None) -> str:
        """The Server-Timing header (W3C) of a finished completion: the gateway's
        stages, the stream stage (from the publish to the terminal event), and within
        it the worker's own time (scheduler queue + engine), so that the overhead of the
        path shows per request in a client or a bench (bench/overhead.py)."""
        parts = [f"{name};dur={ms:.2f}" for name, ms in self.timings.items()]
        if self.ended_at is not None:
            # From the publish's start: a worker may start the task before the
            # publisher thread's answer is back on this loop.
            stream_ms = (self.ended_at - self.started) * 1000 + self.timings.get("publish", 0.0)
            parts.append(f"stream;dur={stream_ms:.2f}")
        if result and "latency_s" in result:
            parts.append(f"worker;dur={result['latency_s'] * 1000:.2f}")
        return ", ".join(parts)

    @property
    def ttft_s(self) -> float | None:
        if self.first_token_at is not None:
            return self.first_token_at - self.started
        # A non-streamed generation sends no token events: the worker's own
        # first-token time, counted back from when its result arrived here.
        result = self._events[-1].get("result") if self._events else None
        if self.ended_at is None or not result or result.get("first_token_s") is None:
            return None
        return max(0.0, self.ended_at - self.started - (result["latency_s"] - result["first_token_s"]))
