"""Shared fixtures. Tests run against the real parts that scripts/test.sh
points the settings at: PostgreSQL, Redis, RabbitMQ and an S3 server.

scripts/test.sh runs the suite twice: with those services, then on the embedded
default (no service variables: SQLite, in-memory channel layer, local-memory
cache, the in-process worker, the local file store). Tests marked
`needs_services` only run in the first pass, and so do those marked
`any_profile`, which would prove nothing more in the second (engines, the
scheduler, export quoting, the authorization matrix).
"""

import json
import os
from collections import Counter
from pathlib import Path

import pytest
from django.conf import settings
from django.db.backends.signals import connection_created
from django.dispatch import receiver
from rest_framework.test import APIClient

from tests.factories import ApiKeyFactory, UserFactory

# Seconds each test file took in a whole run (scripts/test_durations.py writes it).
DURATIONS = Path(__file__).with_name("durations.json")


def _longest_files_first(items) -> None:
    """Under pytest-xdist (scripts/test.sh: a file per worker at a time, in this
    order, --no-loadscope-reorder) the longest files start first, so that no long
    file starts last and runs on alone. A file missing from DURATIONS counts a
    second a test; the figures only order the work."""
    seconds = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    counts = Counter(item.nodeid.split("::")[0] for item in items)
    weight = {path: seconds.get(path, count) for path, count in counts.items()}
    items.sort(key=lambda item: -weight[item.nodeid.split("::")[0]])  # stable: a file's order kept


def with_services() -> bool:
    return settings.DATABASES["default"]["ENGINE"].endswith("postgresql") and bool(settings.REDIS_URL)


def pytest_sessionstart(session):
    engine = settings.DATABASES["default"]["ENGINE"]
    if not with_services() and (engine.endswith("postgresql") or settings.REDIS_URL):
        raise pytest.UsageError(
            "The suite runs with PostgreSQL and Redis, or on the embedded default with neither; "
            f"run it with scripts/test.sh (database engine is {engine!r}, REDIS_URL={settings.REDIS_URL!r})."
        )


def pytest_collection_modifyitems(config, items):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        _longest_files_first(items)
    if with_services():
        return
    first_pass_only = [item for item in items if item.get_closest_marker("needs_services")
                       or item.get_closest_marker("any_profile")]
    if first_pass_only:
        config.hook.pytest_deselected(items=first_pass_only)
        items[:] = [item for item in items if item not in first_pass_only]


@receiver(connection_created)
def _sqlite_test_database_without_fsync(sender, connection, **kwargs):
    # A test database need not survive a power cut; every transactional test
    # flushes it, which on SQLite costs an fsync per statement (~0.8 s a test).
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA synchronous=OFF")


@pytest.fixture(scope="session", autouse=True)
def _object_store_bucket():
    from core.blobstore import get_blob_store

    get_blob_store().ensure_bucket()


@pytest.fixture(autouse=True)
def _clean_cache():
    """Every test starts with an empty cache (Redis, or local memory): rate buckets, presence..."""
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
