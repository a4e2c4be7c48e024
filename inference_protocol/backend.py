"""How the gateway hands a generation to a worker and reads its events back:
the interface, and the reader both implementations share.

Two backends (settings.INFERENCE_BACKEND picks one):
- inference_client.backend.CeleryBackend: a task on the model's queue
  (gpu.<model>) to GPU workers; events come back through the Redis event log;
- inference_worker.inprocess.InProcessBackend (embedded default): the worker's
  own `run_generation` on a thread in this process; events through the
  in-memory log.

Readers get each character of output exactly once, even when a worker died
mid-generation and the redelivered task replayed it (events carry offsets).
"""

from __future__ import annotations

import abc
import functools
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from inference_protocol.events import EventLog, get_event_log, replay
from inference_protocol.generation import GenerationRequest

# How long one blocking read of the event log waits (ms) before checking again.
READ_BLOCK_MS = 1000


class Backend(abc.ABC):
    def __init__(self, log: EventLog | None = None):
        self.log = log or get_event_log()

    @abc.abstractmethod
    def submit(self, request: GenerationRequest) -> None:
        """Queue the request; returns at once."""

    async def asubmit(self, request: GenerationRequest) -> None:
        """``submit`` from the event loop (backends whose submit blocks override it)."""
        self.submit(request)

    def cancel(self, request_id: str) -> None:
        self.log.cancel(request_id)

    async def acancel(self, request_id: str) -> None:
        await self.log.acancel(request_id)

    @abc.abstractmethod
    def live_workers(self, model: str | None = None) -> list[dict[str, Any]]:
        """Heartbeat records of the workers serving ``model`` (or every model)."""

    def events(self, request_id: str, *, timeout_s: float | None = None) -> Iterator[dict[str, Any]]:
        """Token events (deduplicated), then one terminal event (done/error)."""
        reader = _EventReader(timeout_s)
        while not reader.finished:
            batch = [] if reader.expired() else self.log.read(request_id, reader.cursor, reader.block_ms())
            if not batch and (final := self.log.final(request_id)) is not None:
                if not reader.expired():  # its end may have come since the read
                    batch = self.log.read(request_id, reader.cursor, 0)
                batch = batch or reader.replayed(final)  # its log gone, or ending without it
            yield from reader.feed(batch)

    async def aevents(self, request_id: str, *, timeout_s: float | None = None,
                      attached: bool = False) -> AsyncIterator[dict[str, Any]]:
        """``events`` for async views. ``attached``: a reader of a request that may
        have finished long ago (a retry), answered from its result if it has one."""
        reader = _EventReader(timeout_s)
        if attached and (final := await self.log.afinal(request_id)) is not None:
            for event in reader.feed(reader.replayed(final)):
                yield event
        while not reader.finished:
            batch = [] if reader.expired() else await self.log.aread(request_id, reader.cursor,
                                                                      reader.block_ms())
            if not batch and (final := await self.log.afinal(request_id)) is not None:
                if not reader.expired():
                    batch = await self.log.aread(request_id, reader.cursor, 0)
                batch = batch or reader.replayed(final)
            for event in reader.feed(batch):
                yield event

    def result(self, request_id: str, *, timeout_s: float | None = None) -> dict[str, Any]:
        """Wait for the terminal event (done carries the full text)."""
        for event in self.events(request_id, timeout_s=timeout_s):
            if event["type"] != "token":
                return event
        raise RuntimeError("event stream ended without a terminal event")


class _EventReader:
    """Turns raw log entries into what a reader sees: each character of output
    once (a redelivered attempt, or the result's replay, starts again from offset
    0), then the terminal event, or a timeout error. A token past what has been
    delivered (a log that expired and was written to again) is skipped: the
    result's replay fills the gap."""

    def __init__(self, timeout_s: float | None):
        self.cursor, self.finished = "0", False
        self.delivered: dict[int, int] = {}   # choice index -> characters delivered
        self.logprobs_sent: dict[int, int] = {}   # choice index -> logprob entries delivered
        self.deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self.timeout_s = timeout_s

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    def block_ms(self) -> int:
        if self.deadline is None:
            return READ_BLOCK_MS
        return max(1, min(READ_BLOCK_MS, int((self.deadline - time.monotonic()) * 1000)))

    def replayed(self, final: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """The log's entries rebuilt from the result, after this reader's cursor."""
        return [(self.cursor, event) for event in replay(final)]

    def feed(self, batch: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
        if not batch and self.expired():
            self.finished = True
            message = f"no result within {self.timeout_s:.0f}s"
            return [{"type": "error", "code": "timeout", "message": message}]
        out: list[dict[str, Any]] = []
        for cursor, event in batch:
            self.cursor = cursor
            if event["type"] != "token":
                self.finished = True
                return [*out, event]
            index = event.get("index", 0)
            delivered = self.delivered.get(index, 0)
            start = delivered - event["offset"]
            if start < 0:
                continue
            logprobs = self._new_logprobs(index, event, start)
            if start < len(event["text"]) or logprobs:
                text = event["text"][start:]
                self.delivered[index] = delivered + len(text)
                token: dict[str, Any] = {"type": "token", "text": text}
                if "index" in event:
                    token["index"] = index
                if logprobs is not None:
                    token["logprobs"] = logprobs
                out.append(token)
        return out

    def _new_logprobs(self, index: int, event: dict[str, Any], start: int) -> list[Any] | None:
        """The event's logprob entries not yet delivered: an event at offset 0
        carries its choice's entries from the first (a replay may carry them all),
        one further on only its own, already sent if its text was."""
        if "logprobs" not in event:
            return None
        entries: list[Any] = event["logprobs"]
        sent = self.logprobs_sent.get(index, 0)
        if event["offset"] == 0:
            fresh = entries[sent:]
        elif start == 0:
            fresh = entries
        else:
            return None
        self.logprobs_sent[index] = sent + len(fresh)
        return fresh


@functools.cache
def get_backend() -> Backend:
    backend: Backend = import_string(settings.INFERENCE_BACKEND)()
    return backend


def live_workers(model: str | None = None) -> list[dict[str, Any]]:
    """Heartbeat records of the live workers (of ``model``, or all)."""
    return get_backend().live_workers(model)
