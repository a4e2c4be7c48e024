from django.apps import AppConfig
from django.conf import settings


class PlaygroundConfig(AppConfig):
    name = "playground"

    def ready(self):
        from core.startup import serving

        serving.connect(_start_webhook_sweeper, dispatch_uid="playground.webhook_sweeper")


def _start_webhook_sweeper(sender, **kwargs):
    """Without a broker there is no beat: the serving process sweeps overdue webhook
    deliveries itself, those a previous process left first."""
    if settings.CELERY_BROKER_URL:
        return None
    from .webhooks.delivery import Sweeper

    return Sweeper().start()
