"""The seed's ``batchstring(list[str]) -> list[str]`` API, served by the scheduler.

Each item becomes its own request, so items of one call are batched with
everyone else's (not sealed into a private batch), and the outputs come back in
input order. With ``FixedCostEngine`` an item's output is the item reversed.
The scheduler must be running (``scheduler.start()``): this blocks the calling
thread until every item is done.
"""

from __future__ import annotations

import time
import uuid

from inference_worker.engines.base import EngineError, SamplingParams, Sequence
from inference_worker.scheduler import Priority, RequestFailed, RequestHandle, Scheduler

MAX_ITEMS = 1000


class BatchStringError(EngineError):
    """One item failed (``index``, ``item_code``) or the whole call was invalid."""

    code = "batchstring_failed"

    def __init__(self, message: str, *, code: str | None = None, index: int | None = None,
                 item_code: str | None = None):
        super().__init__(message, code=code)
        self.index = index
        self.item_code = item_code


def batchstring(items: list[str], *, scheduler: Scheduler,
                priority: Priority | str = Priority.FREE, timeout: float | None = None,
                max_items: int = MAX_ITEMS) -> list[str]:
    """Map each input string to its output string, in order.

    Fails fast, before anything reaches the device, on a non-list, an empty
    list, more than ``max_items`` items, or an item the engine rejects (empty,
    longer than the context window). If an item fails later, the others are
    cancelled and ``BatchStringError`` names the item. ``timeout`` (seconds)
    bounds the whole call and is each item's deadline.
    """
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        raise BatchStringError("batchstring takes a list of strings", code="invalid_input")
    if not items:
        raise BatchStringError("batchstring got an empty list", code="empty_input")
    if len(items) > max_items:
        raise BatchStringError(f"batchstring got {len(items)} items; the limit is {max_items}",
                               code="too_many_items")

    call_id = uuid.uuid4().hex[:12]
    seqs = []
    for i, text in enumerate(items):
        seq = Sequence(id=f"bs-{call_id}-{i}", messages=[{"role": "user", "content": text}])
        try:
            scheduler.engine.prepare(seq)   # validate every item before queueing any
            # Leave the output the whole rest of the context: never truncated by us.
            seq.params = SamplingParams(
                max_tokens=max(1, scheduler.context_window - len(seq.prompt_tokens)))
        except EngineError as exc:
            raise BatchStringError(f"item {i}: {exc}", code=exc.code, index=i,
                                   item_code=exc.code) from exc
        seqs.append(seq)

    handles: list[RequestHandle] = []
    try:
        for seq in seqs:
            handles.append(scheduler.submit(seq, priority, timeout=timeout))
        give_up = None if timeout is None else time.monotonic() + timeout
        out = []
        for i, handle in enumerate(handles):
            left = None if give_up is None else max(0.0, give_up - time.monotonic())
            try:
                out.append(handle.result(left).text)
            except RequestFailed as exc:
                raise BatchStringError(f"item {i} failed: {exc.code}: {exc}", index=i,
                                       item_code=exc.code) from exc
            except TimeoutError as exc:
                raise BatchStringError(f"batchstring timed out after {timeout}s at item {i}",
                                       code="deadline_exceeded", index=i) from exc
        return out
    except BaseException:
        for handle in handles:
            handle.cancel("batchstring call failed")
        raise
