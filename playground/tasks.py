"""Celery tasks of the playground app (found by the Celery app's autodiscovery)."""

from .webhooks.tasks import deliver  # noqa: F401
