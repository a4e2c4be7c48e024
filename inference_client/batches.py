"""The Batch API's batches (/v1/batches): create, read and cancel the jobs that run
a file's lines (inference_client.batch_files).

Execution: a background job (inference_client.batch_job, driven by core.jobs:
``manage.py batch_worker`` with services, BATCH_DISPATCH none; in the embedded
default a thread of the server that created the batch). An account has at most
BATCH_MAX_ACTIVE unfinished batches.
"""

from __future__ import annotations

import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.selectors import account_tier
from core.error_codes import DomainError
from core.jobs import dispatch, request_cancel
from core.vocabulary import Tier
from inference_client.batch_files import ACTIVE, ENDPOINTS, new_id
from inference_client.batch_job import BATCH_JOB, batch_drive
from inference_client.models import Batch, BatchFile


def batch_create(*, user, api_key, input_file_id, endpoint, completion_window="24h",
                 metadata=None) -> Batch:
    try:
        f = BatchFile.objects.get(pk=input_file_id, user=user)
    except (BatchFile.DoesNotExist, ValueError):
        raise DomainError(f"No file with id {input_file_id!r}.", code="file_not_found",
                          field="input_file_id") from None
    if f.purpose != BatchFile.Purpose.BATCH:
        raise DomainError("The input file's purpose must be 'batch'.", code="invalid_file_purpose",
                          field="input_file_id")
    if endpoint not in ENDPOINTS:
        raise DomainError(f"'endpoint' must be one of {', '.join(sorted(ENDPOINTS))}.", code="invalid_value",
                          field="endpoint")
    if f.endpoint != endpoint:
        raise DomainError(f"The file's lines call {f.endpoint}, not {endpoint}.", code="endpoint_mismatch",
                          field="endpoint")
    if completion_window != "24h":
        raise DomainError("'completion_window' must be '24h'.", code="invalid_value",
                          field="completion_window")
    if metadata is not None and (not isinstance(metadata, dict) or len(metadata) > 16 or not all(
            isinstance(k, str) and isinstance(v, str) and len(k) <= 64 and len(v) <= 512
            for k, v in metadata.items())):
        raise DomainError("'metadata' must be at most 16 string pairs.", code="invalid_value",
                          field="metadata")
    with transaction.atomic():
        # First (it locks the user's row): one account's creates queue here.
        BATCH_JOB.slot_check(user)
        if not BatchFile.objects.select_for_update().filter(pk=f.pk).exists():  # deleted meanwhile
            raise DomainError(f"No file with id {input_file_id!r}.", code="file_not_found",
                              field="input_file_id")
        _check_enqueued_tokens(user, api_key, f)
        batch = Batch.objects.create(id=new_id("batch_"), user=user, api_key=api_key, input_file=f,
                                     endpoint=endpoint, total=f.lines, metadata=metadata,
                                     expires_at=timezone.now() + datetime.timedelta(hours=24))
        dispatch(BATCH_JOB, batch.pk)
    return batch


def _check_enqueued_tokens(user, api_key, f: BatchFile) -> None:
    """A batch is refused at create if the account's enqueued tokens (its
    unfinished batches' inputs) would pass its tier's limit."""
    tier = api_key.tier if api_key is not None else account_tier(user=user)  # a browser session
    limit = settings.BATCH_ENQUEUED_TOKENS.get(tier, settings.BATCH_ENQUEUED_TOKENS[Tier.FREE])
    # Locks the account's active batches: two creates at once cannot both pass.
    active = list(Batch.objects.select_for_update().filter(user=user, status__in=ACTIVE)
                  .values_list("input_file__tokens", flat=True))
    enqueued = sum(active)
    if enqueued + f.tokens > limit:
        raise DomainError(f"Enqueued token limit reached for the {tier} tier: this batch needs about "
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
        raise DomainError(f"The batch is already {batch.status}.", code="batch_finished")
    # No driver holds it: cancelled at once (finished lines are kept, in the output
    # file) where servers drive batches; else the next batch_worker poll ends it.
    unheld = request_cancel(BATCH_JOB, batch.pk, status=Batch.Status.CANCELLING)
    if unheld and settings.BATCH_DISPATCH == "thread":
        batch_drive(batch.pk)
    batch.refresh_from_db()
    return batch
