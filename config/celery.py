"""The Celery app; GPU workers run `celery -A config worker -Q gpu.<model>`, webhook
workers `-Q webhooks`, and one `celery -A config beat` sends the periodic tasks."""

import os
from pathlib import Path

from celery import Celery
from celery.beat import PersistentScheduler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("promptyard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


class BeatScheduler(PersistentScheduler):
    """Celery's own, keeping its state file in VAR_DIR, which a fresh checkout lacks."""

    def setup_schedule(self):
        Path(self.schedule_filename).parent.mkdir(parents=True, exist_ok=True)
        super().setup_schedule()
