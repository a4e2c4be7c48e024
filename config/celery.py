"""The Celery app; GPU workers run `celery -A config worker -Q gpu.<model>`."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("promptyard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
