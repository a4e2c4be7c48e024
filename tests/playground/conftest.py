import pytest
from rest_framework.test import APIClient

from sharing.models import Grant, GrantRole
from tests.factories import LabelFactory, PromptFactory, PromptVersionFactory, UserFactory


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


@pytest.fixture
def team(prompt, settings):
    """The owner's client, two editors' and a viewer's, and three versions with production on v1."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # ~0.5 s a user otherwise
    v1 = PromptVersionFactory(prompt=prompt, body="one")
    v2 = PromptVersionFactory(prompt=prompt, parent=v1, body="two")
    v3 = PromptVersionFactory(prompt=prompt, parent=v1, body="three")
    LabelFactory(version=v1, name="production")
    clients = {"owner": APIClient()}
    clients["owner"].force_login(prompt.owner)
    for name, role in (("alice", GrantRole.EDITOR), ("bob", GrantRole.EDITOR), ("vic", GrantRole.VIEWER)):
        user = UserFactory(username=name)
        Grant.objects.create(prompt=prompt, user=user, role=role, created_by=prompt.owner)
        clients[name] = APIClient()
        clients[name].force_login(user)
    return clients, (v1, v2, v3)
