import datetime
import uuid

import pytest
from django.conf import settings

from inference_client.control import documents
from inference_client.models import ModelVersion
from inference_protocol import config


def _forget_documents():
    if settings.REDIS_URL:  # or this process's own watcher applies the newest one again
        from core.redis import get_redis

        get_redis().delete(config.latest_key())
    config.state().reset()


@pytest.fixture(autouse=True)
def _back_to_document_zero(settings):
    """Documents a test applies in this process do not outlive it, and other
    processes of the session (the shared live gateway and worker) never see them:
    they go to a namespace of this test's own."""
    settings.CONFIG_NAMESPACE = f"config-test-{uuid.uuid4().hex[:8]}"
    _forget_documents()
    yield
    _forget_documents()


def _versions(*names):
    for name in names:
        ModelVersion.objects.create(model="fixed-cost", version=name, manifest={}, total_size=1,
                                    manifest_sha256="0" * 64, created_by="t",
                                    created_at=datetime.datetime.now(datetime.UTC))


@pytest.fixture
def served(db, settings, django_capture_on_commit_callbacks):
    _versions("v1", "v2")
    content = documents.content_with(config.bootstrap_content(settings), [
        'models.fixed-cost.versions={"v1": 100}', "rollout.ready_timeout_s=0.6"])
    with django_capture_on_commit_callbacks(execute=True):
        documents.config_publish(content=content, actor="ops")
