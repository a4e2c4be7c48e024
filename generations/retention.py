"""Retention: generations older than GENERATIONS_RETENTION_DAYS are deleted, a
chunk at a time (with their bodies in the object store), by the hourly beat
entry (generations.tasks.sweep) or `manage.py generations_sweep`."""

from __future__ import annotations

import datetime
import logging

from django.conf import settings
from django.utils import timezone

from core.blobstore import get_blob_store

from .models import Generation

logger = logging.getLogger(__name__)
CHUNK = 5000


def generations_sweep() -> int:
    """Delete what is past retention; how many generations went."""
    cutoff = timezone.now() - datetime.timedelta(days=settings.GENERATIONS_RETENTION_DAYS)
    gone = 0
    while True:
        chunk = list(Generation.objects.filter(created_at__lt=cutoff).order_by("id")
                     .values_list("id", "output_blob", "messages_blob")[:CHUNK])
        if not chunk:
            return gone
        store = get_blob_store()
        for _, *blobs in chunk:
            for key in filter(None, blobs):
                try:
                    store.delete(key)
                except Exception:  # kept in the store; the row goes all the same
                    logger.exception("generation body %s not deleted", key)
        Generation.objects.filter(id__in=[pk for pk, *_ in chunk]).delete()
        gone += len(chunk)
