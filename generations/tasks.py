"""The retention sweep as a beat entry (config/settings/celery.py: CELERY_BEAT_SCHEDULE), and
online evaluation's scoring, queued by generations.online."""

from celery import shared_task

from .online import online_score as online_scoring
from .retention import generations_sweep


@shared_task(name="generations.sweep", ignore_result=True)
def sweep() -> int:
    return generations_sweep()


@shared_task(name="generations.online_score", ignore_result=True)
def online_score(rule_id: int, generation_ids: list[int]) -> int:
    """Score a rule's sampled generations (generations.online)."""
    return online_scoring(rule_id, generation_ids)
