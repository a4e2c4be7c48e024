"""The retention sweep and the regression check as beat entries
(config/settings/celery.py: CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from .regression import regression_check
from .retention import generations_sweep


@shared_task(name="generations.sweep", ignore_result=True)
def sweep() -> int:
    return generations_sweep()


@shared_task(name="generations.regression_check", ignore_result=True)
def regression_check_task() -> int:
    return len(regression_check())
