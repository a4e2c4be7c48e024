from django.apps import AppConfig
from django.conf import settings


class GenerationsConfig(AppConfig):
    name = "generations"

    def ready(self):
        from core.startup import serving

        serving.connect(_start_checker, dispatch_uid="generations.regression_checker")


def _start_checker(sender, **kwargs):
    """Without a broker there is no beat: the serving process runs the regression check itself."""
    if settings.CELERY_BROKER_URL:
        return None
    from .checker import RegressionChecker

    return RegressionChecker().start()
