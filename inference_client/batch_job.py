"""A Batch API batch as a background job (core.jobs): its declaration and its
step, one window of BATCH_WINDOW lines.

Each line is a generation at priority "batch" (the scheduler gives it only
slots interactive traffic leaves empty) with a request id derived from
(batch, custom_id): a resumed batch, or a redelivered task, gets the worker's
stored result for that id instead of a second generation. A finished line is
stored once (unique per batch and custom_id); ``start`` skips the lines stored
already. Windows are pipelined: the next one goes to the workers before the
last one's results are awaited and stored, with no database connection held
while waiting. A cancel stops at the next window (what is in flight is
cancelled) and keeps finished lines; a broker that refuses work pauses the
batch (its lease let go) for the next poll to resume. At the end the output
and error files are written in OpenAI's line format.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings
from django.utils import timezone

from core.blobstore import BlobWriter, get_blob_store
from core.error_codes import DomainError
from core.jobs import CANCELLED, PAUSED, Job, JobKind, Slots, drive
from core.leases import release_connection
from core.vocabulary import Priority
from inference_client.batch_files import ACTIVE, ENDPOINTS, PENDING_CHUNK, file_lines, line_request_id, new_id
from inference_client.completion import Completion
from inference_client.models import Batch, BatchFile, BatchLine
from inference_client.rendering import completion_body, embeddings_body, error_status
from inference_protocol.backend import Backend, get_backend
from inference_protocol.generation import GenerationRequest

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


def _request(batch: Batch, line: dict, check) -> tuple[GenerationRequest, object]:
    request = check(line["body"])
    params = request.params
    request_id = line_request_id(batch.pk, line["custom_id"])
    return GenerationRequest(
        request_id=request_id, model=request.model, messages=request.messages, max_tokens=params.max_tokens,
        temperature=params.temperature, top_p=params.top_p, stop=list(params.stop),
        seed=params.seed if params.seed is not None else int(request_id[:8], 16) & 0x7FFFFFFF,
        priority=Priority.BATCH.wire, timeout_s=settings.BATCH_LINE_TIMEOUT_S,
        response_format=params.response_format or params.tool_constraint, n=params.n, inputs=params.inputs,
        logprobs=params.logprobs, raw_prompt=params.raw_prompt, stream=False), request


class _BrokerAway(Exception):
    pass


@dataclasses.dataclass
class _Window:
    """Lines sent to the workers (number, line, generation, parsed request), and the
    rows of lines refused before they were sent."""
    sent: list[tuple]
    rows: list[BatchLine]


def _submit(batch: Batch, window: list, check, backend: Backend) -> _Window:
    out = _Window(sent=[], rows=[])
    for number, line in window:
        try:
            generation, request = _request(batch, line, check)
        except DomainError as exc:
            out.rows.append(_line(batch, number, line, "", exc.status,
                                  {"error": {"code": exc.code, "message": exc.message}}))
            continue
        try:
            backend.submit(generation)
        except Exception as exc:  # the broker is away: left for a resume, not failed
            raise _BrokerAway from exc
        out.sent.append((number, line, generation, request))
    return out


def _cancel(window: _Window, backend: Backend) -> None:
    for _, _, generation, _ in window.sent:
        backend.cancel(generation.request_id)


def _collect(job: Job, batch: Batch, window: _Window, kind: str, backend: Backend) -> bool:
    """Wait for a window's results and store them; False when the batch was
    cancelled meanwhile (what finished is stored, the rest cancelled)."""
    rows = window.rows
    deadline = time.monotonic() + settings.BATCH_LINE_TIMEOUT_S + 5
    for index, (number, line, generation, request) in enumerate(window.sent):
        while True:
            release_connection()  # no connection held while the lines run
            remaining = deadline - time.monotonic()
            event = backend.result(generation.request_id, timeout_s=max(0.05, min(2.0, remaining)))
            if event.get("code") != "timeout" or event["type"] != "error" or remaining <= 2.0:
                break
            if job.cancelled():
                _cancel(_Window(sent=window.sent[index:], rows=[]), backend)
                BatchLine.objects.bulk_create(rows, ignore_conflicts=True)
                _progress(batch.pk)
                return False
        if event["type"] == "done":
            params = request.params
            c = Completion(id=f"{'cmpl' if kind == 'text' else 'chatcmpl'}-{generation.request_id}",
                           request_id=generation.request_id, model=request.model, created=int(time.time()),
                           kind=kind, n=params.n, logprobs=params.logprobs is not None, tools=params.tools,
                           echo=request.messages[-1]["content"] if params.echo else None)
            body = embeddings_body(c, event["result"], request.encoding_format) if kind == "embed" else \
                completion_body(c, event["result"])
            rows.append(_line(batch, number, line, generation.request_id, 200, body))
        else:
            status, body = error_status(event)
            rows.append(_line(batch, number, line, generation.request_id, status, body))
    BatchLine.objects.bulk_create(rows, ignore_conflicts=True)
    _progress(batch.pk)
    return True


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
    backend: Backend
    pending: Iterator[tuple[int, dict[str, Any]]]  # (number, line) of the lines not stored yet
    inflight: _Window | None = None


def _start(job: Job, backend: Backend | None = None) -> _Work:
    job.rows().filter(status=Batch.Status.VALIDATING).update(status=Batch.Status.IN_PROGRESS,
                                                             in_progress_at=timezone.now())
    batch = Batch.objects.select_related("input_file", "user").get(pk=job.pk)
    check, kind = ENDPOINTS[batch.endpoint]
    return _Work(batch=batch, check=check, kind=kind, backend=backend or get_backend(),
                 pending=_pending(batch, enumerate(file_lines(batch.input_file), start=1)))


def _step(job: Job, work: _Work) -> str | None:
    """Submit the next window, then store the one before it."""
    batch = work.batch
    expired = job.clock.now() >= batch.expires_at  # completion_window passed
    window = [] if expired else list(itertools.islice(work.pending, max(1, settings.BATCH_WINDOW)))
    try:
        submitted = _submit(batch, window, work.check, work.backend) if window else None
    except _BrokerAway as exc:
        # Lines submitted but not stored are resubmitted under the same request ids
        # by the next driver, which then gets the workers' results for them.
        logger.warning("batch %s: submit failed (%r); paused for a resume", batch.pk, exc.__cause__)
        return PAUSED
    if work.inflight is not None and not _collect(job, batch, work.inflight, work.kind, work.backend):
        work.inflight = None
        if submitted is not None:  # cancelled meanwhile
            _cancel(submitted, work.backend)
        return CANCELLED
    work.inflight = submitted
    if expired:  # what was in flight is stored; the rest is reported expired
        _expire(batch, work.pending)
        return EXPIRED
    return None if work.inflight is not None else "done"


def _finish(job: Job, work: _Work, outcome: str) -> str:
    """Store what is in flight (on a cancel), then write the output and error
    files in OpenAI's line format and end the batch."""
    batch = work.batch
    if outcome == CANCELLED and work.inflight is not None:
        _collect(job, batch, work.inflight, work.kind, work.backend)  # keeps what finished, cancels the rest
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


def batch_drive(batch_id, *, backend: Backend | None = None, owner: str | None = None) -> str:
    """Drive a batch to its end, a cancel, or until another driver holds it
    ("busy") or the broker refuses work ("paused": the lease is let go, and the
    next batch_worker poll resumes it). Returns the batch's status."""
    return drive(BATCH_JOB, batch_id, owner=owner, backend=backend)
