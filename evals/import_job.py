"""Background dataset imports: a large upload waits in the object store
(imports/<id>) until a driver parses it into a new version. A job of
core.jobs: queued -> parsing -> writing -> done | failed.

The driver parses the whole file in one step (progress as lines parsed,
renewing the lease, no connection held between bursts), then writes the new
version and the import's end in one transaction: an import resumed after its
driver died parses again and never writes a second version.
"""

from __future__ import annotations

import dataclasses

from django.db import transaction
from django.utils import timezone

from core.blobstore import get_blob_store
from core.error_codes import DomainError
from core.jobs import Job, JobKind, Slots, dispatch, drive
from core.leases import release_connection

from .datasets import _check_base, dataset_version_create, parse_rows
from .models import Dataset, DatasetImport


def dataset_import_start(
    *,
    dataset: Dataset,
    author,
    data: bytes,
    fmt: str,
    base_version_id,
    replace: bool,
    skip_invalid: bool,
    message: str,
):
    """Keep the upload in the object store and queue its import (for `manage.py
    eval_worker`, or with EVAL_DISPATCH=thread a thread once the transaction
    commits). 429 past the author's EVAL_MAX_ACTIVE_IMPORTS unfinished imports:
    checked before the upload is stored, and again as the import is queued."""
    base = _check_base(dataset, base_version_id)
    with transaction.atomic():
        IMPORT_JOB.slot_check(author)
    job = DatasetImport(
        dataset=dataset,
        author=author,
        fmt=fmt,
        replace=replace,
        skip_invalid=skip_invalid,
        base=base,
        message=message,
        size=len(data),
        lines_total=data.count(b"\n") + 1,
    )
    get_blob_store().put(job.object_key, data)
    try:
        with transaction.atomic():
            IMPORT_JOB.slot_check(author)
            job.save()
    except DomainError:
        get_blob_store().delete(job.object_key)
        raise
    dispatch(IMPORT_JOB, job.pk)
    return job


@dataclasses.dataclass
class _Work:
    job: DatasetImport
    rows: list = dataclasses.field(default_factory=list)
    error: dict = dataclasses.field(default_factory=dict)  # error_code, error_message of a failed import


def _start(job: Job) -> _Work:
    job.write(status="parsing", lines_done=0)
    return _Work(job=DatasetImport.objects.select_related("dataset", "author").get(pk=job.pk))


def _step(job: Job, work: _Work) -> str:
    """Parse the file: "done" with its rows, or "failed" with the error."""
    def progress(line: int) -> None:  # a short burst: no connection held while parsing
        job.write(lines_done=line)
        job.heartbeat()
        release_connection()

    release_connection()
    try:
        text = get_blob_store().get(work.job.object_key).decode("utf-8-sig")
    except UnicodeDecodeError:
        work.error = {"error_code": "file_not_utf8", "error_message": "The file is not UTF-8 text."}
        return "failed"
    rows, errors = parse_rows(fmt=work.job.fmt, text=text, on_progress=progress)
    job.write(status="writing", lines_done=work.job.lines_total, valid=len(rows), error_count=len(errors),
              errors=errors[:1000])
    try:
        if errors and not work.job.skip_invalid:
            raise DomainError(
                f"{len(errors)} rows do not import (first: line {errors[0]['line']}: "
                f"{errors[0]['message']}). Fix them, or import with skip_invalid.",
                code="invalid_rows",
            )
        if not rows:
            raise DomainError("The file has no rows.", code="dataset_empty")
    except DomainError as exc:
        work.error = {"error_code": exc.code, "error_message": exc.message}
        return "failed"
    work.rows = rows
    return "done"


def _finish(job: Job, work: _Work, outcome: str) -> str:
    """The new version and the import's end, one transaction under the lease."""
    imported = work.job
    try:
        with transaction.atomic():
            job.hold()
            fields = dict(work.error)
            if outcome == "done":
                fields["version"] = dataset_version_create(
                    dataset=imported.dataset, author=imported.author, base_version_id=imported.base_id,
                    add=work.rows, replace=imported.replace,
                    message=imported.message or f"import ({imported.fmt}, {len(work.rows)} rows)")
            job.end(status=outcome, finished_at=timezone.now(), **fields)
    except DomainError as exc:
        outcome = "failed"
        job.end(status=outcome, finished_at=timezone.now(), error_code=exc.code,
                error_message=exc.message)
    try:
        get_blob_store().delete(imported.object_key)
    except Exception:  # the object is only a leftover now
        pass
    return outcome


IMPORT_JOB = JobKind(
    name="import", model=DatasetImport, active=("queued", "parsing", "writing"), lease_setting="EVAL_LEASE_S",
    start=_start, step=_step, finish=_finish, dispatch_setting="EVAL_DISPATCH", cancel_field="",
    slots=Slots(user_field="author", setting="EVAL_MAX_ACTIVE_IMPORTS", label="dataset import"))


def dataset_import_run(import_id) -> str:
    """Parse a queued import and write its version. Returns the import's final
    status ("busy" when another driver has it)."""
    return drive(IMPORT_JOB, import_id)
