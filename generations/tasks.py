"""The retention sweep and the regression check as beat entries
(config/settings/celery.py: CELERY_BEAT_SCHEDULE), and online evaluation's
scoring, queued by generations.online."""

from celery import shared_task

from .online import online_score as online_scoring
from .regression import regression_check
from .retention import generations_sweep


@shared_task(name="generations.sweep", ignore_result=True)
def sweep() -> int:
    return generations_sweep()


@shared_task(name="generations.regression_check", ignore_result=True)
def regression_check_task() -> int:
    return len(regression_check())


@shared_task(name="generations.online_score", bind=True, ignore_result=True, max_retries=3)
def online_score(self, rule_id: int, generation_ids: list[int]) -> int:
    """Score a rule's sampled generations (generations.online). Again on a
    failure (the database away): what was scored is skipped then."""
    try:
        return online_scoring(rule_id, generation_ids)
    except Exception as exc:
        raise self.retry(exc=exc, countdown=2 ** self.request.retries) from exc
