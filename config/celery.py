"""The Celery app; GPU workers run `celery -A config worker -Q gpu.<model>`, webhook
workers `-Q webhooks`, and one `celery -A config beat` sends the periodic tasks."""

import os
from pathlib import Path

from celery import Celery, bootsteps
from celery.beat import PersistentScheduler
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("promptyard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


class AckFlush(bootsteps.StartStopStep):
    """Wake the consumer's event loop every CELERY_ACK_FLUSH_MS.

    With the threads pool, a late ack is queued from the task's thread with
    hub.call_soon, which does not wake the loop: it goes out at the loop's next
    wake-up, a new message or its 1 s idle poll. Once the prefetch window is full
    of finished-but-unacked tasks, no message comes, so acks (and with them the
    next messages) arrived in bursts a second apart (issue 14's "in-worker tasks
    254 -> 0 -> 155 -> 0 at 1 s intervals"). A repeating no-op timer bounds the
    wait; the wake-ups cost microseconds each."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    timer = None

    def start(self, c):
        if c.hub is not None and settings.CELERY_ACK_FLUSH_MS > 0:
            self.timer = c.hub.call_repeatedly(settings.CELERY_ACK_FLUSH_MS / 1000, _no_op)

    def stop(self, c):
        if self.timer is not None:
            self.timer.cancel()


def _no_op() -> None:
    pass


app.steps["consumer"].add(AckFlush)


class BeatScheduler(PersistentScheduler):
    """Celery's own, keeping its state file in VAR_DIR, which a fresh checkout lacks."""

    def setup_schedule(self):
        Path(self.schedule_filename).parent.mkdir(parents=True, exist_ok=True)
        super().setup_schedule()
