"""A Batch API batch as a background job (core.jobs): its declaration and its
step, which stores the lines ended since the last one (up to BATCH_WINDOW).

Each line goes through completion_create in the batch lane
(inference_client.batch_lane), the path of /v1: the prompt cache, admission
(the batch key's buckets, never their last BATCH_INTERACTIVE_RESERVE share; a
refusal for the budget waits its Retry-After), the readiness-gated version
choice, a usage record per line, stored with the lines. It runs at priority
"batch" (the scheduler gives it only slots interactive traffic leaves empty),
with a request id derived from (batch, custom_id): a resumed batch, or a
redelivered task, gets the worker's stored result for that id instead of a
second generation. Lines are fed with at most two device calls' worth started
per live worker (``_cap``: more would only wait in the workers' prefetch
windows, taking the room interactive requests arrive into), the next starting as soon
as one ends; no database connection is held while waiting. A finished line is
stored once (unique per batch and custom_id); ``start`` skips the lines stored
already. A cancel stops at the next step (what is in flight is cancelled) and
keeps finished lines; a broker that refuses work pauses the batch (its lease let
go) for the next poll to resume. At the end the output and error files are
written in OpenAI's line format.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings
from django.utils import timezone

from accounts.selectors import account_tier
from core.blobstore import BlobWriter, get_blob_store
from core.error_codes import DomainError
from core.jobs import CANCELLED, PAUSED, Job, JobKind, Slots, drive
from core.leases import release_connection
from inference_client.batch_files import ACTIVE, ENDPOINTS, PENDING_CHUNK, file_lines, line_request_id, new_id
from inference_client.batch_lane import POLL_S, BatchLane, LaneFeed, serving_names
from inference_client.models import Batch, BatchFile, BatchLine, UsageRecord
from inference_client.rendering import completion_body, embeddings_body, error_status
from inference_client.stages.call import SessionCaller
from inference_protocol.backend import get_backend

logger = logging.getLogger(__name__)

EXPIRED = "expired"


class _ResultFile:
    """A batch's output or error file, streamed to the object store as its lines
    come (one part in memory, whatever the batch's size); opened at its first line."""

    def __init__(self, *, user, name: str):
        self.user, self.name = user, name
        self.id = new_id("file-")
        self.key = f"batch-files/{self.id}"
        self.writer: BlobWriter | None = None
        self.lines = 0

    def add(self, data: bytes) -> None:
        if self.writer is None:
            self.writer = get_blob_store().writer(self.key)
        self.writer.write(data)
        self.lines += 1

    def commit(self) -> None:
        if self.writer is not None:
            self.writer.commit()

    def abort(self) -> None:
        if self.writer is not None:
            self.writer.abort()

    def record(self) -> BatchFile | None:
        if self.writer is None:
            return None
        return BatchFile.objects.create(id=self.id, user=self.user, purpose=BatchFile.Purpose.BATCH_OUTPUT,
                                        filename=self.name, bytes=self.writer.bytes, lines=self.lines,
                                        blob_key=self.key)


def _progress(batch_id) -> None:
    lines = BatchLine.objects.filter(batch_id=batch_id)
    Batch.objects.filter(pk=batch_id).update(completed=lines.filter(status_code=200).count(),
                                             failed=lines.exclude(status_code=200).count())


def _pending(batch: Batch, lines):
    """(number, line) of the lines not stored yet, in file order. Stored lines are
    looked up a chunk at a time: a resumed 50,000-line batch holds no set of them."""
    while chunk := [(number, json.loads(raw)) for number, raw in itertools.islice(lines, PENDING_CHUNK)]:
        ids = [line["custom_id"] for _, line in chunk]
        stored = set(BatchLine.objects.filter(batch=batch, custom_id__in=ids)
                     .values_list("custom_id", flat=True))
        yield from ((number, line) for number, line in chunk if line["custom_id"] not in stored)


def _cap(model: str | None) -> int:
    """Lines started and not ended: two calls' worth (max_batch_size) per live
    worker of the model's serving names, one running, one waiting for its call
    (the room inference_worker.sizing gives them); BATCH_WINDOW while none is known."""
    if model is None:
        return settings.BATCH_WINDOW
    beats = [b for name in serving_names(model) for b in get_backend().live_workers(name)]
    return 2 * sum(int(b.get("max_batch_size") or 0) for b in beats) or settings.BATCH_WINDOW


def _feed(work: _Work, count: int) -> None:
    """Put up to ``count`` more lines in the feed (a line its endpoint's checker
    refuses is stored as its error at once)."""
    items, taken = [], 0
    for number, line in itertools.islice(work.pending, max(0, count)):
        taken += 1
        try:
            request = work.check(line["body"])
        except DomainError as exc:
            work.rows.append(_line(work.batch, number, line, "", exc.status,
                                   {"error": {"code": exc.code, "message": exc.message}}))
            continue
        work.model = work.model or request.model
        rid = line_request_id(work.batch.pk, line["custom_id"])
        lane_request = {"request_id": rid, "body": line["body"], "kind": work.kind}
        items.append(((number, line, rid, request), lane_request, request))
    if items:
        work.feed.set_cap(_cap(work.model))  # before the first line starts
        work.feed.put(items)
    work.exhausted = taken < count


def _row(work: _Work, ended: tuple) -> BatchLine:
    (number, line, rid, request), event, _, completion = ended
    if event["type"] == "done" and completion is not None:
        result = event["result"]
        body = embeddings_body(completion, result, request.encoding_format) if work.kind == "embed" else \
            completion_body(completion, result)
        return _line(work.batch, number, line, rid, 200, body)
    status, body = error_status(event)
    return _line(work.batch, number, line, rid, status, body)


def _store(work: _Work, ended: list[tuple]) -> None:
    """The ended lines (and their usage records), one INSERT each, then the counts."""
    rows = work.rows + [_row(work, e) for e in ended]
    work.rows = []
    BatchLine.objects.bulk_create(rows, ignore_conflicts=True)
    UsageRecord.objects.bulk_create([UsageRecord(**e[2]) for e in ended if e[2]], ignore_conflicts=True)
    _progress(work.batch.pk)


def _line(batch, number, line, request_id, status, body) -> BatchLine:
    return BatchLine(batch=batch, line=number, custom_id=line["custom_id"], request_id=request_id,
                     status_code=status, body=body)


def _expire(batch: Batch, pending) -> None:
    body = {"error": {"code": "batch_expired",
                      "message": "This line was not run before the batch's completion_window ended."}}
    while chunk := list(itertools.islice(pending, PENDING_CHUNK)):
        BatchLine.objects.bulk_create([_line(batch, number, line, "", 408, body) for number, line in chunk],
                                      ignore_conflicts=True)


@dataclasses.dataclass
class _Work:
    batch: Batch
    check: Callable[[dict[str, Any]], Any]  # the endpoint's body checker
    kind: str  # "chat", "text" or "embed"
    pending: Iterator[tuple[int, dict[str, Any]]]  # (number, line) of the lines not stored yet
    feed: LaneFeed
    model: str | None = None    # the lines' model (the first line's), whose workers set the cap
    rows: list[BatchLine] = dataclasses.field(default_factory=list)  # refused lines, not stored yet
    exhausted: bool = False     # every pending line is in the feed


def _start(job: Job) -> _Work:
    job.rows().filter(status=Batch.Status.VALIDATING).update(status=Batch.Status.IN_PROGRESS,
                                                             in_progress_at=timezone.now())
    batch = Batch.objects.select_related("input_file", "user", "api_key__user").get(pk=job.pk)
    check, kind = ENDPOINTS[batch.endpoint]
    # The key that created the batch (its buckets, its usage), else the owner's session buckets.
    caller = batch.api_key or SessionCaller(user=batch.user, tier=account_tier(user=batch.user))
    feed = LaneFeed(BatchLane(caller=caller), cap=settings.BATCH_WINDOW,
                    timeout_s=settings.BATCH_LINE_TIMEOUT_S, no_worker_wait_s=settings.BATCH_LINE_TIMEOUT_S)
    return _Work(batch=batch, check=check, kind=kind, feed=feed,
                 pending=_pending(batch, enumerate(file_lines(batch.input_file), start=1)))


def _code(ended: tuple) -> str:
    return ended[1].get("code", "") if ended[1]["type"] == "error" else ""


def _step(job: Job, work: _Work) -> str | None:
    """Top the feed up, then store the lines that ended meanwhile."""
    batch, feed, window = work.batch, work.feed, max(1, settings.BATCH_WINDOW)
    expired = job.clock.now() >= batch.expires_at  # completion_window passed
    if not expired and not work.exhausted:
        # The cap plus a window queued behind it: a line ending starts the next at once.
        _feed(work, feed.cap + window - feed.unfinished)
    release_connection()  # no connection held while the lines run
    ended = feed.take(window, timeout_s=POLL_S)
    if any(_code(e) == "queue_unavailable" for e in ended):
        # Lines started but not stored are resubmitted under the same request ids
        # by the next driver, which then gets the workers' results for them.
        logger.warning("batch %s: the broker refused a line; paused for a resume", batch.pk)
        ended += feed.stop(cancel=False)
        _store(work, [e for e in ended if _code(e) not in ("queue_unavailable", "cancelled")])
        return PAUSED
    if ended or work.rows:
        _store(work, ended)
    if feed.unfinished or not (work.exhausted or expired):
        return None
    if expired:  # what was in flight is stored; the rest is reported expired
        _expire(batch, work.pending)
        return EXPIRED
    return "done"


def _finish(job: Job, work: _Work, outcome: str) -> str:
    """Store what is in flight (on a cancel), then write the output and error
    files in OpenAI's line format and end the batch."""
    batch = work.batch
    if outcome == CANCELLED and work.feed.unfinished:  # keeps what finished, cancels the rest
        _store(work, [e for e in work.feed.stop(cancel=True) if _code(e) != "cancelled"])
    _progress(batch.pk)
    cancelled = job.cancelled()
    files = [_ResultFile(user=batch.user, name=f"{batch.pk}_{kind}.jsonl") for kind in ("output", "error")]
    try:
        for row in BatchLine.objects.filter(batch=batch).order_by("line").iterator(chunk_size=PENDING_CHUNK):
            response = {"status_code": row.status_code, "request_id": row.request_id, "body": row.body}
            out = {"id": f"batch_req_{row.request_id or row.custom_id}", "custom_id": row.custom_id,
                   "response": response, "error": None}
            if row.status_code != 200:
                error = row.body.get("error", {})
                out["error"] = {"code": error.get("code"), "message": error.get("message")}
            files[row.status_code != 200].add(json.dumps(out).encode() + b"\n")
        for f in files:
            f.commit()
    except BaseException:
        for f in files:
            f.abort()
        raise
    output, error = (f.record() for f in files)
    status = Batch.Status.CANCELLED if cancelled else Batch.Status.EXPIRED if outcome == EXPIRED else \
        Batch.Status.COMPLETED
    job.end(status=status, output_file=output, error_file=error, finished_at=timezone.now())
    return status


BATCH_JOB = JobKind(
    name="batch", model=Batch, active=ACTIVE, lease_setting="BATCH_LEASE_S", start=_start, step=_step,
    finish=_finish, dispatch_setting="BATCH_DISPATCH",
    slots=Slots(user_field="user", setting="BATCH_MAX_ACTIVE", label="batch"))


def batch_drive(batch_id, *, owner: str | None = None) -> str:
    """Drive a batch to its end, a cancel, or until another driver holds it
    ("busy") or the broker refuses work ("paused": the lease is let go, and the
    next batch_worker poll resumes it). Returns the batch's status."""
    return drive(BATCH_JOB, batch_id, owner=owner)
