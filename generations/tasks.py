"""The retention sweep as a beat entry (config/settings/celery.py: CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from .retention import generations_sweep


@shared_task(name="generations.sweep", ignore_result=True)
def sweep() -> int:
    return generations_sweep()
