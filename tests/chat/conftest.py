import pytest

from tests.factories import ApiKeyFactory, UserFactory


@pytest.fixture
def pair(transactional_db):
    """Two users with raw API keys: ((alice, key), (bob, key))."""
    out = []
    for name in ("alice", "bob"):
        user = UserFactory(username=name)
        out.append((user, ApiKeyFactory.create_with_raw(user=user)[1]))
    return out


@pytest.fixture
def carol(transactional_db):
    user = UserFactory(username="carol")
    return user, ApiKeyFactory.create_with_raw(user=user)[1]
