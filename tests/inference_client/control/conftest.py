import pytest
from django.conf import settings

from inference_protocol import config


def _forget_documents():
    if settings.REDIS_URL:  # or this process's own watcher applies the newest one again
        from core.redis import get_redis

        get_redis().delete(config.LATEST_KEY)
    config.state().reset()


@pytest.fixture(autouse=True)
def _back_to_document_zero():
    """Documents a test applies in this process do not outlive it."""
    _forget_documents()
    yield
    _forget_documents()
