"""The Celery tasks of webhook deliveries (queue WEBHOOK_QUEUE). Late ack: a
worker lost mid-attempt means the message comes back, and the attempt counter
(incremented before the POST) keeps the retry budget honest. The sweep is a
beat entry (config/settings/celery.py: CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from .delivery import DELIVER_TASK, attempt_delivery, deliveries_sweep


@shared_task(name=DELIVER_TASK, bind=True, acks_late=True, ignore_result=True,
             max_retries=5)
def deliver(self, delivery_id: str) -> str:
    try:
        return attempt_delivery(delivery_id)
    except Exception as exc:  # e.g. the database away: the message comes back, the row stays pending
        raise self.retry(exc=exc, countdown=2 ** self.request.retries) from exc


# Named as before the webhooks app was split out of playground (beat entries carry it).
@shared_task(name="playground.webhooks.sweep", ignore_result=True)
def sweep() -> int:
    return len(deliveries_sweep())
