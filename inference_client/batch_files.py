"""The Batch API's files (/v1/files): JSONL inputs, validated line by line as they
are uploaded (streamed: one line in memory at a time), each line {"custom_id",
"method": "POST", "url", "body"}, every url the same endpoint
(/v1/chat/completions, /v1/completions or /v1/embeddings), custom_ids unique,
every body checked by the same checker as the live endpoint, for a model that
serves that endpoint and its features. Errors name each bad line by its number.
The file goes to the object store; batches (inference_client.batches) read it.
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import transaction

from core.blobstore import get_blob_store
from core.error_codes import DomainError
from inference_client.models import Batch, BatchFile
from inference_client.request_params import ChatRequest
from inference_client.stages.admit import estimate_prompt_tokens
from inference_client.validation import (
    EmbedRequest,
    check_chat_request,
    check_embeddings_request,
    check_text_request,
)
from inference_protocol import features
from inference_protocol.catalog import UnknownModel, model_spec

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


def new_id(prefix: str) -> str:
    return f"{prefix}{secrets.token_hex(12)}"


def line_request_id(batch_id: str, custom_id: str) -> str:
    return uuid.uuid5(LINE_NAMESPACE, f"{batch_id}/{custom_id}").hex


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
    except DomainError as exc:
        where = f" (param {exc.field})" if exc.field else ""
        raise _BadLine(f"body: {exc.message}{where}") from None
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
        raise DomainError("'purpose' must be 'batch' (the only file purpose this server takes).",
                          code="invalid_value", field="purpose")
    if upload.size > settings.BATCH_MAX_FILE_BYTES:
        raise DomainError(f"The file is {upload.size} bytes; at most {settings.BATCH_MAX_FILE_BYTES} are "
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
            raise DomainError(f"The file has more than {settings.BATCH_MAX_LINES} lines.",
                              code="too_many_lines", field="file")
        try:
            tokens += _check_line(raw.rstrip(b"\r\n"), seen, endpoints)
        except _BadLine as exc:
            invalid += 1
            if len(shown) < MAX_REPORTED_ERRORS:
                shown.append({"line": number, "message": str(exc)})
    if count == 0:
        raise DomainError("The file has no lines.", code="empty_file", field="file")
    if invalid:
        raise DomainError(f"{invalid} line(s) of the file are invalid; the first: line {shown[0]['line']}: "
                       f"{shown[0]['message']}", code="invalid_file", field="file",
                       extra={"errors": shown, "invalid_lines": invalid})
    file_id = new_id("file-")
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


def file_delete(f: BatchFile) -> None:
    """Refused while a batch reads the file; a batch that has ended keeps the file's
    id (input_file_id) after it is gone, as OpenAI's do. The file's row is locked,
    so no batch starts on it in between (batch_create locks it too)."""
    with transaction.atomic():
        if not BatchFile.objects.select_for_update().filter(pk=f.pk).exists():
            return
        if f.batches.filter(status__in=ACTIVE).exists():
            raise DomainError("A running batch reads this file.", code="file_in_use")
        f.delete()
