"""How many requests a GPU worker holds at once: its window, which is the
size of Celery's thread pool and (one message per thread) its prefetch count.
The worker decides it from its engines (config/celery.py); ``-c`` overrides it.

A fixed-batch device seals its next batch the moment a call ends, from the
requests waiting in the worker then. Of a window of W, B are running (B: the
scheduler's max batch size), so the next call gets at most W - B: below 2B
every call is short (W = 64, B = 50: calls of 32, 0.63 of the device, as
bench/e2e.py measured). The B slots a call frees come back from the broker
(the late acks out, the next messages in) within ``refill_s``, during the calls
that follow; a full batch must still be waiting when each of them ends. Hence

    window = B x (depth + 1),   depth = 2 + ceil(refill_s / call_s)

the running batch, the next, and one more for each call a refill spans (at
least one: the margin for a refill slower than ``refill_s``); and one batch
more for batch lines: the batch driver keeps two calls' worth of them started
per worker (inference_client.batch_job), and those waiting their turn here
must not take the room interactive requests arrive into.
``call_s``: the engine's device call time where it declares one (``call_s``),
else taken as ``refill_s`` (depth 3). A continuous-batching engine frees its
slots one at a time as sequences finish, so the same window leaves it room.
A worker serving several models holds the sum of their windows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def depth(call_s: float | None, refill_s: float) -> int:
    """Batches the worker holds: the running one, the next, and what covers a refill."""
    if not call_s or call_s <= 0:
        call_s = refill_s
    return 2 + math.ceil(refill_s / call_s) if refill_s > 0 else 2


def window(max_batch_size: int, call_s: float | None, refill_s: float) -> int:
    return max(1, max_batch_size) * (depth(call_s, refill_s) + 1)


def worker_window(schedulers: Iterable, refill_s: float) -> int:
    """The window of a worker running ``schedulers`` (at least 1)."""
    total = sum(window(s.max_batch_size, getattr(s.engine, "call_s", None), refill_s) for s in schedulers)
    return max(1, total)
