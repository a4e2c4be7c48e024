import pytest

from tests.factories import PromptFactory


@pytest.fixture(autouse=True)
def _cold_body_cache():
    """Each test reads bodies from storage, not from a previous test's cache."""
    from playground.bodies import body_cache

    body_cache.clear()
    yield
    body_cache.clear()


@pytest.fixture
def prompt(user):
    return PromptFactory(owner=user)


@pytest.fixture
def small_storage(settings):
    """Tiny thresholds so small test bodies take the store and diff paths."""
    settings.PROMPT_INLINE_MAX_BYTES = 64
    settings.PROMPT_SNAPSHOT_EVERY = 3
    return settings


def create_version(client, prompt, **fields):
    payload = {"model": "fixed-cost", "message": "edit", **fields}
    return client.post(f"/api/prompts/{prompt.pk}/versions", payload, format="json")
