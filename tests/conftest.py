"""Shared fixtures. Tests run against the real parts that scripts/test.sh
points the settings at: PostgreSQL, Redis, RabbitMQ and an S3 server."""

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from tests.factories import ApiKeyFactory, UserFactory


def pytest_sessionstart(session):
    engine = settings.DATABASES["default"]["ENGINE"]
    if not engine.endswith("postgresql") or not settings.REDIS_URL:
        raise pytest.UsageError(
            "The test suite runs against PostgreSQL and Redis: run it with scripts/test.sh "
            f"(database engine is {engine!r}, REDIS_URL={settings.REDIS_URL!r})."
        )


@pytest.fixture(scope="session", autouse=True)
def _object_store_bucket():
    from core.blobstore import get_blob_store

    get_blob_store().ensure_bucket()


@pytest.fixture(autouse=True)
def _clean_cache():
    """Every test starts with an empty Redis database (rate buckets, presence...)."""
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture
def user(db):
    return UserFactory()


@pytest.fixture
def api_client():
    return APIClient()


@pytest.fixture
def auth_client(user):
    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture
def api_key(user):
    """(ApiKey row, raw key) for `user` on the free tier."""
    return ApiKeyFactory.create_with_raw(user=user)
