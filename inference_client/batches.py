"""The Batch API: /v1/files (JSONL inputs, outputs) and /v1/batches (jobs).

Input: a JSONL file, validated line by line as it is uploaded (streamed: one
line in memory at a time), each line {"custom_id", "method": "POST", "url",
"body"}, every url the same endpoint (/v1/chat/completions, /v1/completions or
/v1/embeddings), custom_ids unique, every body checked by the same checker as
the live endpoint, for a model that serves that endpoint and its features.
Errors name each bad line by its number. The file goes to the object store.

Execution: a driver (``manage.py batch_worker`` with services, BATCH_DISPATCH
none; in the embedded default a thread of the server that created the batch)
holds the batch by a lease (core.leases, shared with evaluation runs) it renews
after each window of BATCH_WINDOW lines, and no database connection while it
waits on the lines. An account has at most BATCH_MAX_ACTIVE unfinished batches.
Each line is a generation at priority "batch"
(the scheduler gives it only slots interactive traffic leaves empty) with a
request id derived from (batch, custom_id): a resumed batch, or a redelivered
task, gets the worker's stored result for that id instead of a second
generation. A finished line is stored once (unique per batch and custom_id);
after a crash the next driver skips the lines already stored. A cancel stops
at the next window (what is in flight is cancelled) and keeps finished lines.
At the end the output and error files are written in OpenAI's line format.
"""

from __future__ import annotations

import dataclasses
import datetime
import itertools
import json
import logging
import secrets
import time
import uuid
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.selectors import account_tier
from core.blobstore import BlobWriter, get_blob_store
from core.errors import ApiError
from core.leases import (
    drive_in_thread,
    job_slot_check,
    lease_claim,
    lease_owner_id,
    lease_renew,
    release_connection,
    unheld,
)
from inference_client.completion import Completion
from inference_client.models import Batch, BatchFile, BatchLine
from inference_client.rendering import completion_body, embeddings_body, error_status
from inference_client.services import estimate_prompt_tokens
from inference_client.validation import (
    ChatRequest,
    EmbedRequest,
    check_chat_request,
    check_embeddings_request,
    check_text_request,
)
from inference_protocol import features
from inference_protocol.backend import Backend, get_backend
from inference_protocol.catalog import UnknownModel, model_spec
from inference_protocol.generation import GenerationRequest

logger = logging.getLogger(__name__)

ENDPOINTS: dict[str, tuple[Callable[[dict[str, Any]], ChatRequest | EmbedRequest], str]] = {
             "/v1/chat/completions": (check_chat_request, "chat"),
             "/v1/completions": (check_text_request, "text"),
             "/v1/embeddings": (check_embeddings_request, "embed")}
LINE_NAMESPACE = uuid.UUID("1d1f5d1e-8a51-4d33-9a7b-6a3f0f3c2b71")
ACTIVE = (Batch.Status.VALIDATING, Batch.Status.IN_PROGRESS, Batch.Status.CANCELLING)
# Per-line errors returned at once for a bad file (the first ones).
MAX_REPORTED_ERRORS = 20
# Lines read (and stored rows written) per database round trip when a batch
# resumes, expires or writes its result files.
PENDING_CHUNK = 1000


def _new_id(prefix: str) -> str:
    return f"{prefix}{secrets.token_hex(12)}"


def line_request_id(batch_id: str, custom_id: str) -> str:
    return uuid.uuid5(LINE_NAMESPACE, f"{batch_id}/{custom_id}").hex


# -- files --------------------------------------------------------------------

class _BadLine(Exception):
    pass


def _check_line(raw: bytes, seen: set[str], endpoints: set[str]) -> int:
    """The line's estimated tokens if it is good; raises _BadLine saying what is wrong."""
    if len(raw) > settings.INFERENCE_MAX_BODY_BYTES:
        raise _BadLine(f"the line is {len(raw)} bytes; at most {settings.INFERENCE_MAX_BODY_BYTES} "
                       "are accepted")
    try:
        line = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _BadLine(f"not valid JSON ({exc})") from None
    if not isinstance(line, dict):
        raise _BadLine("a line must be a JSON object")
    extra = sorted(set(line) - {"custom_id", "method", "url", "body"})
    if extra:
        raise _BadLine(f"unrecognized field '{extra[0]}'")
    custom_id = line.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id or len(custom_id) > 512:
        raise _BadLine("'custom_id' must be a string of 1-512 characters")
    if custom_id in seen:
        raise _BadLine(f"duplicate custom_id {custom_id!r}")
    seen.add(custom_id)
    if line.get("method") != "POST":
        raise _BadLine("'method' must be POST")
    url = line.get("url")
    if url not in ENDPOINTS:
        raise _BadLine(f"'url' must be one of {', '.join(sorted(ENDPOINTS))} (got {url!r})")
    endpoints.add(url)
    if len(endpoints) > 1:
        raise _BadLine(f"every line must call the same endpoint ({', '.join(sorted(endpoints))} seen)")
    body = line.get("body")
    if not isinstance(body, dict):
        raise _BadLine("'body' must be a JSON object")
    if body.get("stream"):
        raise _BadLine("'body.stream' must be false in a batch")
    check, kind = ENDPOINTS[url]
    try:
        request = check(body)
        spec = model_spec(request.model)
    except ApiError as exc:
        where = f" (param {exc.field})" if exc.field else ""
        raise _BadLine(f"body: {exc.detail}{where}") from None
    except UnknownModel as exc:
        raise _BadLine(f"body.model: {exc}") from None
    if (kind == "embed") == features.generates(spec):  # what completion_create refuses live
        serves = "/v1/chat/completions and /v1/completions" if features.generates(spec) else "/v1/embeddings"
        raise _BadLine(f"body.model: the model {request.model!r} serves {serves} only")
    missing = features.unsupported(spec, request.params.features())
    if missing:
        raise _BadLine(f"body: the model {request.model!r} does not implement {missing[0]!r}")
    return estimate_prompt_tokens(request.messages) + request.params.n * request.params.max_tokens


def file_create(*, user, upload, purpose: str) -> BatchFile:
    """Validate a JSONL upload line by line, then store it. A bad file is a 400
    listing its bad lines (by number), and nothing is stored."""
    if purpose != BatchFile.Purpose.BATCH:
        raise ApiError("'purpose' must be 'batch' (the only file purpose this server takes).",
                       code="invalid_value", field="purpose")
    if upload.size > settings.BATCH_MAX_FILE_BYTES:
        raise ApiError(f"The file is {upload.size} bytes; at most {settings.BATCH_MAX_FILE_BYTES} are "
                       "accepted.", code="file_too_large", field="file")
    seen: set[str] = set()
    endpoints: set[str] = set()
    shown: list[dict[str, object]] = []
    invalid, count, tokens = 0, 0, 0
    for number, raw in enumerate(upload, start=1):  # Django's UploadedFile yields lines
        if not raw.strip():
            continue
        count += 1
        if count > settings.BATCH_MAX_LINES:
            raise ApiError(f"The file has more than {settings.BATCH_MAX_LINES} lines.",
                           code="too_many_lines", field="file")
        try:
            tokens += _check_line(raw.rstrip(b"\r\n"), seen, endpoints)
        except _BadLine as exc:
            invalid += 1
            if len(shown) < MAX_REPORTED_ERRORS:
                shown.append({"line": number, "message": str(exc)})
    if count == 0:
        raise ApiError("The file has no lines.", code="empty_file", field="file")
    if invalid:
        raise ApiError(f"{invalid} line(s) of the file are invalid; the first: line {shown[0]['line']}: "
                       f"{shown[0]['message']}", code="invalid_file", field="file",
                       extra={"errors": shown, "invalid_lines": invalid})
    file_id = _new_id("file-")
    key = f"batch-files/{file_id}"
    store = get_blob_store()
    path = getattr(upload, "temporary_file_path", None)
    if path is not None:
        store.put_file(key, path())
    else:
        upload.seek(0)
        store.put(key, upload.read())
    return BatchFile.objects.create(id=file_id, user=user, purpose=purpose, filename=upload.name[:255],
                                    bytes=upload.size, lines=count, endpoint=endpoints.pop(),
                                    tokens=tokens, blob_key=key)


def file_lines(batch_file: BatchFile):
    """The file's lines, streamed from the object store (one chunk in memory)."""
    tail = b""
    for chunk in get_blob_store().iter_chunks(batch_file.blob_key):
        tail += chunk
        *whole, tail = tail.split(b"\n")
        yield from (line for line in whole if line.strip())
    if tail.strip():
        yield tail


def file_body(f: BatchFile) -> dict:
    return {"id": f.id, "object": "file", "bytes": f.bytes, "created_at": int(f.created_at.timestamp()),
            "filename": f.filename, "purpose": f.purpose, "status": "processed", "status_details": None}


class _ResultFile:
    """A batch's output or error file, streamed to the object store as its lines
    come (one part in memory, whatever the batch's size); opened at its first line."""

    def __init__(self, *, user, name: str):
        self.user, self.name = user, name
        self.id = _new_id("file-")
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


def file_delete(f: BatchFile) -> None:
    """Refused while a batch reads the file; a batch that has ended keeps the file's
    id (input_file_id) after it is gone, as OpenAI's do. The file's row is locked,
    so no batch starts on it in between (batch_create locks it too)."""
    with transaction.atomic():
        if not BatchFile.objects.select_for_update().filter(pk=f.pk).exists():
            return
        if f.batches.filter(status__in=ACTIVE).exists():
            raise ApiError("A running batch reads this file.", code="file_in_use", status_code=409)
        f.delete()


# -- batches ------------------------------------------------------------------

def batch_create(*, user, api_key, input_file_id, endpoint, completion_window="24h",
                 metadata=None) -> Batch:
    try:
        f = BatchFile.objects.get(pk=input_file_id, user=user)
    except (BatchFile.DoesNotExist, ValueError):
        raise ApiError(f"No file with id {input_file_id!r}.", code="file_not_found", status_code=404,
                       field="input_file_id") from None
    if f.purpose != BatchFile.Purpose.BATCH:
        raise ApiError("The input file's purpose must be 'batch'.", code="invalid_file_purpose",
                       field="input_file_id")
    if endpoint not in ENDPOINTS:
        raise ApiError(f"'endpoint' must be one of {', '.join(sorted(ENDPOINTS))}.", code="invalid_value",
                       field="endpoint")
    if f.endpoint != endpoint:
        raise ApiError(f"The file's lines call {f.endpoint}, not {endpoint}.", code="endpoint_mismatch",
                       field="endpoint")
    if completion_window != "24h":
        raise ApiError("'completion_window' must be '24h'.", code="invalid_value", field="completion_window")
    if metadata is not None and (not isinstance(metadata, dict) or len(metadata) > 16 or not all(
            isinstance(k, str) and isinstance(v, str) and len(k) <= 64 and len(v) <= 512
            for k, v in metadata.items())):
        raise ApiError("'metadata' must be at most 16 string pairs.", code="invalid_value", field="metadata")
    with transaction.atomic():
        # First (it locks the user's row): one account's creates queue here.
        job_slot_check(user=user, active=Batch.objects.filter(user=user, status__in=ACTIVE),
                       limit=settings.BATCH_MAX_ACTIVE, setting="BATCH_MAX_ACTIVE", kind="batch")
        if not BatchFile.objects.select_for_update().filter(pk=f.pk).exists():  # deleted meanwhile
            raise ApiError(f"No file with id {input_file_id!r}.", code="file_not_found", status_code=404,
                           field="input_file_id")
        _check_enqueued_tokens(user, api_key, f)
        batch = Batch.objects.create(id=_new_id("batch_"), user=user, api_key=api_key, input_file=f,
                                     endpoint=endpoint, total=f.lines, metadata=metadata,
                                     expires_at=timezone.now() + datetime.timedelta(hours=24))
        batch_dispatch(batch.pk)
    return batch


def _check_enqueued_tokens(user, api_key, f: BatchFile) -> None:
    """A batch is refused at create if the account's enqueued tokens (its
    unfinished batches' inputs) would pass its tier's limit."""
    tier = api_key.tier if api_key is not None else account_tier(user=user)  # a browser session
    limit = settings.BATCH_ENQUEUED_TOKENS.get(tier, settings.BATCH_ENQUEUED_TOKENS["free"])
    # Locks the account's active batches: two creates at once cannot both pass.
    active = list(Batch.objects.select_for_update().filter(user=user, status__in=ACTIVE)
                  .values_list("input_file__tokens", flat=True))
    enqueued = sum(active)
    if enqueued + f.tokens > limit:
        raise ApiError(f"Enqueued token limit reached for the {tier} tier: this batch needs about "
                       f"{f.tokens} tokens, {enqueued} are already enqueued, the limit is {limit}.",
                       code="token_limit_exceeded", field="input_file_id",
                       extra={"enqueued_tokens": enqueued, "limit": limit})


def batch_body(b: Batch) -> dict:
    def ts(value):
        return int(value.timestamp()) if value else None
    done = b.status in (Batch.Status.COMPLETED, Batch.Status.FAILED, Batch.Status.CANCELLED,
                        Batch.Status.EXPIRED)
    return {"id": b.id, "object": "batch", "endpoint": b.endpoint, "errors": None,
            "input_file_id": b.input_file_id, "completion_window": b.completion_window, "status": b.status,
            "output_file_id": b.output_file_id, "error_file_id": b.error_file_id,
            "created_at": ts(b.created_at), "in_progress_at": ts(b.in_progress_at),
            "expires_at": ts(b.expires_at),
            "completed_at": ts(b.finished_at) if b.status == Batch.Status.COMPLETED else None,
            "failed_at": ts(b.finished_at) if b.status == Batch.Status.FAILED else None,
            "cancelled_at": ts(b.finished_at) if b.status == Batch.Status.CANCELLED else None,
            "finalizing_at": None, "cancelling_at": None,
            "expired_at": ts(b.finished_at) if b.status == Batch.Status.EXPIRED else None,
            "request_counts": {"total": b.total, "completed": b.completed, "failed": b.failed},
            "metadata": b.metadata, "finished": done}


def batch_cancel(*, batch: Batch) -> Batch:
    if batch.status not in ACTIVE:
        raise ApiError(f"The batch is already {batch.status}.", code="batch_finished", status_code=409)
    Batch.objects.filter(pk=batch.pk).update(cancel_requested=True, status=Batch.Status.CANCELLING)
    # No driver holds it: cancelled at once (finished lines are kept, in the output
    # file) where servers drive batches; else the next batch_worker poll ends it.
    if settings.BATCH_DISPATCH == "thread" and Batch.objects.filter(pk=batch.pk).filter(unheld()).exists():
        batch_drive(batch.pk)
    batch.refresh_from_db()
    return batch


def batch_dispatch(batch_id) -> None:
    if settings.BATCH_DISPATCH == "thread":
        transaction.on_commit(lambda: drive_in_thread(batch_drive, batch_id, name=f"batch-{batch_id}"))


def stale_batches():
    return Batch.objects.filter(status__in=ACTIVE).filter(unheld()).order_by("created_at")


def _claim(batch_id, owner: str) -> bool:
    claimed = lease_claim(Batch.objects.filter(pk=batch_id, status__in=ACTIVE), owner=owner,
                          seconds=settings.BATCH_LEASE_S)
    if claimed:
        Batch.objects.filter(pk=batch_id, status=Batch.Status.VALIDATING).update(
            status=Batch.Status.IN_PROGRESS, in_progress_at=timezone.now())
    return claimed


def _renew(batch_id, owner: str) -> bool:
    return lease_renew(Batch.objects.filter(pk=batch_id, status__in=ACTIVE), owner=owner,
                       seconds=settings.BATCH_LEASE_S)


def _progress(batch_id) -> None:
    lines = BatchLine.objects.filter(batch_id=batch_id)
    Batch.objects.filter(pk=batch_id).update(completed=lines.filter(status_code=200).count(),
                                             failed=lines.exclude(status_code=200).count())


def _cancelled(batch_id) -> bool:
    return Batch.objects.filter(pk=batch_id, cancel_requested=True).exists()


def batch_drive(batch_id, *, backend: Backend | None = None, owner: str | None = None) -> str:
    """Drive a batch to its end, a cancel, or until another driver holds it
    ("busy") or the broker refuses work ("paused": the lease is let go, and the
    next batch_worker poll resumes it). Returns the batch's status."""
    backend = backend or get_backend()
    owner = owner or lease_owner_id()
    if not _claim(batch_id, owner):
        return "busy"
    batch = Batch.objects.select_related("input_file", "user").get(pk=batch_id)
    check, kind = ENDPOINTS[batch.endpoint]
    pending = _pending(batch, enumerate(file_lines(batch.input_file), start=1))
    inflight: _Window | None = None
    try:
        while True:
            if _cancelled(batch_id):
                if inflight is not None:
                    _collect(batch, inflight, kind, backend)  # keeps what finished, cancels the rest
                break
            expired = timezone.now() >= batch.expires_at  # completion_window passed
            window = [] if expired else list(itertools.islice(pending, max(1, settings.BATCH_WINDOW)))
            # The next window goes to the workers before the last one's results are
            # awaited and stored: the device's batch slots never wait on the driver.
            submitted = _submit(batch, window, check, backend) if window else None
            if inflight is not None and not _collect(batch, inflight, kind, backend):
                if submitted is not None:  # cancelled meanwhile
                    _cancel(submitted, backend)
                break
            inflight = submitted
            if expired:  # what was in flight is stored; the rest is reported expired
                _expire(batch, pending)
                return _finish(batch, owner, expired=True)
            if inflight is None:
                break
            if not _renew(batch_id, owner):
                logger.warning("batch %s: lease lost; another driver continues", batch_id)
                return "busy"
    except _BrokerAway as exc:
        # Lines submitted but not stored are resubmitted under the same request ids
        # by the next driver, which then gets the workers' results for them.
        logger.warning("batch %s: submit failed (%r); paused for a resume", batch_id, exc.__cause__)
        Batch.objects.filter(pk=batch_id, lease_owner=owner).update(lease_until=None)
        return "paused"
    return _finish(batch, owner)


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
        priority="batch", timeout_s=settings.BATCH_LINE_TIMEOUT_S,
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
        except ApiError as exc:
            out.rows.append(_line(batch, number, line, "", exc.status_code,
                                  {"error": {"code": exc.get_codes(), "message": str(exc.detail)}}))
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


def _collect(batch: Batch, window: _Window, kind: str, backend: Backend) -> bool:
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
            if _cancelled(batch.pk):
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


def _finish(batch: Batch, owner: str, *, expired: bool = False) -> str:
    _progress(batch.pk)
    cancelled = _cancelled(batch.pk)
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
    status = Batch.Status.CANCELLED if cancelled else Batch.Status.EXPIRED if expired else \
        Batch.Status.COMPLETED
    Batch.objects.filter(pk=batch.pk, lease_owner=owner).update(
        status=status, output_file=output, error_file=error, finished_at=timezone.now(), lease_until=None)
    return status


__all__ = ["batch_body", "batch_cancel", "batch_create", "batch_drive", "file_body", "file_create",
           "file_lines", "stale_batches"]
