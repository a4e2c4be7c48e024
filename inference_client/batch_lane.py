"""The gateway's batch lane: generations that a driver submits a window at a
time (an evaluation run's cells and judge calls), each through
completion_create, the same path as /v1: prompt cache, admission, the
readiness-gated version choice, routing, usage. As lane "batch" they run at
priority batch, take the owner's per-minute buckets but never their last
BATCH_INTERACTIVE_RESERVE share, and charge nothing to the model's global
bucket (admission.key_buckets / global_bucket hold those rules, for both lanes).

Drivers are threads holding database leases; the gateway is async. One event
loop per process (a daemon thread) runs every window, so its Redis clients and
scripts stay warm between windows. The driver's thread waits on its window and
calls its own ``keep_going`` between waits (a cancel check, a lease renewal:
database work stays on the driver's connection).

A refusal for the owner's budget waits its Retry-After and asks again (a batch
paces itself; its cells never fail for it). A model with no live worker, or a
versioned one with no ready version, is waited for up to ``no_worker_wait_s``,
then its cells fail with model_unavailable. Anything else (a request too large
for the tier, a body the /v1 checker refuses, the queue away) fails that cell
with its code. Usage records come back through completion_create's record sink
and are stored by the driver's thread, one INSERT per window, tagged with the
run; request ids are stable and unique there, so a resumed cell is recorded once.

A Batch API batch feeds its lines through a ``LaneFeed`` instead of windows: at
most ``cap`` of them started and not ended, the next one starting on the loop as
soon as one ends. A GPU worker holds each started request in its prefetch window
until it ends (late acks), so lines beyond what the devices run in a call would
only wait there, taking room that interactive requests then wait in the broker
for (bench/batch.py --live: +170 ms of transport at the p50 with two windows of
64 in flight against a window of 150).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from accounts.models import ApiKey
from accounts.selectors import account_tier
from core.error_codes import DomainError
from inference_client.completion import Completion
from inference_client.models import UsageRecord
from inference_client.services import completion_create
from inference_client.stages.call import SessionCaller
from inference_client.validation import check_chat_request
from inference_protocol import config
from inference_protocol.backend import get_backend
from inference_protocol.catalog import served_name

logger = logging.getLogger(__name__)

# How often the driver's thread calls keep_going while its window runs (s).
POLL_S = 1.0
# The longest wait between two admission attempts of a refused request (s): a
# Retry-After is only an estimate, and the owner's interactive use moves it.
MAX_RETRY_WAIT_S = 5.0
# After a stop, how long the window waits for the cancelled requests' records (s).
STOP_GRACE_S = 5.0


@functools.cache
def _loop() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="batch-lane", daemon=True).start()
    return loop


def serving_names(model: str) -> list[str]:
    """The names whose workers may serve ``model``: its weighted versions'
    (model@version), or the model's own."""
    weights = config.current().versions(model)
    return [served_name(model, v) for v, w in sorted(weights.items()) if w > 0] or [model]


class BatchLane:
    def __init__(self, *, user=None, eval_run=None, caller: ApiKey | SessionCaller | None = None):
        # The owner's own buckets (the ones its browser calls use) at its account's tier,
        # unless a caller is given (a batch created with an API key: that key's).
        self.caller = caller or SessionCaller(user=user, tier=account_tier(user=user))
        self.eval_run = str(eval_run) if eval_run else None

    def run(self, requests: list[dict], *, keep_going: Callable[[], bool], timeout_s: float,
            no_worker_wait_s: float) -> list[dict] | None:
        """The terminal event of each request, in order (done events carry
        ``cache_hit``); None when ``keep_going`` said stop (what was in flight is
        cancelled). A request: {"request_id": stable per cell (a resubmission gets
        the worker's stored result), "body": a /v1/chat/completions body,
        "prompt_version": the saved version it renders, or None; "kind": completion_create's,
        "chat" when absent}."""
        unavailable = self._wait_for_workers({r["body"].get("model") for r in requests}, keep_going,
                                             no_worker_wait_s)
        if unavailable is None:
            return None
        stop = threading.Event()
        future = asyncio.run_coroutine_threadsafe(self._window(requests, unavailable, stop, timeout_s,
                                                               no_worker_wait_s), _loop())
        while True:
            try:
                events, records = future.result(timeout=POLL_S)
                break
            except concurrent.futures.TimeoutError:
                if not stop.is_set() and not keep_going():
                    stop.set()
        # The driver's own connection (and transaction): one INSERT for the window.
        UsageRecord.objects.bulk_create([UsageRecord(**r) for r in records], ignore_conflicts=True)
        return None if stop.is_set() else events

    def _wait_for_workers(self, models: set, keep_going, wait_s: float) -> dict[str, str] | None:
        """{model: why} for the models with no live worker after ``wait_s``
        (polling heartbeats), None when told to stop meanwhile."""
        backend = get_backend()

        def missing(names):
            return {m for m in names if isinstance(m, str)
                    and not any(backend.live_workers(n) for n in serving_names(m))}

        deadline = time.monotonic() + wait_s
        waiting = missing(models)
        while waiting and time.monotonic() < deadline:
            if not keep_going():
                return None
            time.sleep(1.0)  # a backoff between heartbeat reads, not a synchronisation
            waiting = missing(waiting)
        return {m: f"No worker served {m} within {wait_s:g}s." for m in waiting}

    async def _window(self, requests, unavailable: dict, stop: threading.Event, timeout_s: float,
                      no_worker_wait_s: float) -> tuple[list[dict], list[dict]]:
        events: list[dict | None] = [None] * len(requests)
        started: dict[int, Completion] = {}
        records: list[asyncio.Future] = []  # each started request's usage record, once it ends
        for index, request in enumerate(requests):
            if stop.is_set():
                break
            model = request["body"].get("model")
            if model in unavailable:
                events[index] = _error("model_unavailable", unavailable[model])
                continue
            try:
                chat = check_chat_request(request["body"])
                record = asyncio.get_running_loop().create_future()
                completion = await self._admitted(request, chat, stop, record, timeout_s, no_worker_wait_s)
            except DomainError as exc:
                events[index] = _error(exc.code, exc.message)
                continue
            if completion is not None:
                started[index] = completion
                records.append(record)
        finals = {index: asyncio.ensure_future(_final(c)) for index, c in started.items()}
        pending = set(finals.values())
        while pending and not stop.is_set():
            _, pending = await asyncio.wait(pending, timeout=0.25)
        if stop.is_set():
            backend = get_backend()
            for index, task in finals.items():
                if not task.done():
                    await backend.acancel(started[index].request_id)
            await asyncio.wait(set(finals.values()), timeout=STOP_GRACE_S)
        for index, task in finals.items():
            if task.done():
                events[index] = task.result()
        # A record is made just after the terminal event (completion_create's bookkeeping).
        if records:
            await asyncio.wait(records, timeout=STOP_GRACE_S)
        return ([e or _error("cancelled", "the run was cancelled") for e in events],
                [r.result() for r in records if r.done()])

    async def _admitted(self, request: dict, chat, stop: threading.Event, record: asyncio.Future,
                        timeout_s: float, no_worker_wait_s: float):
        """The started completion, asking again while the refusal is the owner's
        budget (or, for a while, no ready version); None when told to stop."""
        deadline = time.monotonic() + no_worker_wait_s
        prompt_ref = {"version": request.get("prompt_version"), "eval_run": self.eval_run}
        while not stop.is_set():
            try:
                completion = await completion_create(
                    api_key_or_user=self.caller, model=chat.model, messages=chat.messages,
                    params=chat.params, kind=request.get("kind", "chat"), prompt_ref=prompt_ref, lane="batch",
                    request_id=request["request_id"],
                    timeout_s=timeout_s,
                    record_sink=functools.partial(_settle_once, record))
                return completion
            except DomainError as exc:
                code = exc.code
                if code == "rate_limit_exceeded":
                    wait_s = int(exc.headers.get("retry-after-ms", 1000)) / 1000
                elif code == "model_unavailable" and time.monotonic() < deadline:
                    wait_s = float(exc.headers.get("Retry-After", 1))
                else:
                    raise
            await asyncio.sleep(min(max(wait_s, 0.05), MAX_RETRY_WAIT_S))
        return None


class LaneFeed:
    """Requests through a lane, at most ``cap`` started and not ended (``set_cap``
    changes it), the rest queued in order on the lane's loop. The driver's thread
    ``put``s (key, request, checked body) items and ``take``s the ended ones:
    (key, terminal event, usage record or None, completion or None)."""

    def __init__(self, lane: BatchLane, *, cap: int, timeout_s: float, no_worker_wait_s: float):
        self.lane, self.cap = lane, max(1, cap)
        self.timeout_s, self.no_worker_wait_s = timeout_s, no_worker_wait_s
        self.unfinished = 0                 # put and not taken (the driver's thread)
        self._stop = threading.Event()
        self._cancel = True
        self._ended: list[tuple] = []
        self._lock = threading.Condition()
        self._running = 0                   # on the loop from here down
        self._room: asyncio.Condition | None = None
        self._stopped: asyncio.Future | None = None

    def put(self, items: list[tuple[Any, dict, Any]]) -> None:
        self.unfinished += len(items)
        asyncio.run_coroutine_threadsafe(self._start(items), _loop()).result()

    def set_cap(self, cap: int) -> None:
        async def update():
            self.cap = max(1, cap)
            async with self._gate():
                self._gate().notify_all()
        asyncio.run_coroutine_threadsafe(update(), _loop()).result()

    def take(self, at_least: int, timeout_s: float) -> list[tuple]:
        """The items ended since the last take, once ``at_least`` have (or after ``timeout_s``)."""
        with self._lock:
            self._lock.wait_for(lambda: len(self._ended) >= min(at_least, self.unfinished), timeout_s)
            ended, self._ended = self._ended, []
        self.unfinished -= len(ended)
        return ended

    def stop(self, *, cancel: bool) -> list[tuple]:
        """Start nothing more and stop waiting; ``cancel``: cancel what runs (else it
        is left to run, for a resumed driver to get its result by its request id).
        Returns what ended meanwhile (the cancelled ones with their records, within
        STOP_GRACE_S)."""
        self._cancel = cancel
        self._stop.set()

        async def wake():
            if self._stopped is not None and not self._stopped.done():
                self._stopped.set_result(None)
            async with self._gate():
                self._gate().notify_all()
        asyncio.run_coroutine_threadsafe(wake(), _loop()).result()
        return self.take(self.unfinished, 2 * STOP_GRACE_S + POLL_S)

    def _gate(self) -> asyncio.Condition:
        if self._room is None:
            self._room = asyncio.Condition()
        return self._room

    async def _start(self, items) -> None:
        if self._stopped is None:
            self._stopped = asyncio.get_running_loop().create_future()
        for key, request, chat in items:
            asyncio.ensure_future(self._one(key, request, chat))

    async def _one(self, key, request: dict, chat) -> None:
        room = self._gate()
        async with room:  # FIFO: the lines start in the order they were put
            await room.wait_for(lambda: self._running < self.cap or self._stop.is_set())
            self._running += 1
        try:
            ended = await self._run(request, chat) if not self._stop.is_set() else \
                (_error("cancelled", "the batch was cancelled"), None, None)
        except Exception as exc:  # a bug must not leave the driver waiting for this one
            logger.exception("batch lane: request %s failed", request["request_id"])
            ended = (_error("server_error", f"{type(exc).__name__}: {exc}"), None, None)
        finally:
            async with room:
                self._running -= 1
                room.notify()
        with self._lock:
            self._ended.append((key, *ended))
            self._lock.notify_all()

    async def _run(self, request: dict, chat) -> tuple[dict, dict | None, Completion | None]:
        assert self._stopped is not None
        record = asyncio.get_running_loop().create_future()
        try:
            completion = await self.lane._admitted(request, chat, self._stop, record, self.timeout_s,
                                                   self.no_worker_wait_s)
        except DomainError as exc:
            return _error(exc.code, exc.message), None, None
        if completion is None:
            return _error("cancelled", "the batch was cancelled"), None, None
        final = asyncio.ensure_future(_final(completion))
        await asyncio.wait({final, self._stopped}, return_when=asyncio.FIRST_COMPLETED)
        if not final.done() and self._cancel:
            await get_backend().acancel(completion.request_id)
            await asyncio.wait({final}, timeout=STOP_GRACE_S)
        if not final.done():
            final.cancel()
            return _error("cancelled", "the batch was cancelled"), None, completion
        event = final.result()
        await asyncio.wait({record}, timeout=STOP_GRACE_S)
        return event, record.result() if record.done() else None, completion


def _settle_once(record: asyncio.Future[dict[str, Any]], fields: dict[str, Any]) -> None:
    """A started request's usage record, kept from its first report."""
    if not record.done():
        record.set_result(fields)


async def _final(completion) -> dict:
    event = await completion.final()
    if event["type"] == "done":
        return {**event, "cache_hit": completion.cache_hit}
    return event


def _error(code: str, message: str) -> dict:
    return {"type": "error", "code": code, "message": message}
