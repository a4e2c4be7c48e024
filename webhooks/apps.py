from django.apps import AppConfig
from django.conf import settings


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self):
        from core.startup import serving

        serving.connect(_start_sweeper, dispatch_uid="webhooks.sweeper")


def _start_sweeper(sender, **kwargs):
    """Without a broker there is no beat: the serving process sweeps overdue webhook
    deliveries itself, those a previous process left first."""
    if settings.CELERY_BROKER_URL:
        return None
    from .delivery import Sweeper

    return Sweeper().start()
