import pytest

from core import adb
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


@pytest.fixture(autouse=True)
def _channel_layer_per_test():
    """Each test (each its own event loop) gets a channel layer of its own, as a server
    process would. channels_redis keeps per-instance receive locks that bind to the loop
    that first waits on them; one still held when a test's loop closed (a message cleanup
    task cut off mid-way) failed the next tests' receives with "bound to a different
    event loop" (channels issue 876)."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()


@pytest.fixture(autouse=True)
async def _close_async_db_pool():
    """Consumers in this loop may open core.adb's pool: close it with the loop,
    so no connection outlives its test (and the test database can be dropped)."""
    yield
    await adb.close()


@pytest.fixture(autouse=True)
def _chat_memory_state_per_test(monkeypatch, settings):
    """On the embedded default the chat state (send buckets, presence) lives in this
    process, and SQLite gives a rolled-back test's user ids to the next test's users:
    each test starts with a state of its own, as new users of a server would."""
    if not settings.REDIS_URL:
        from chat import realtime

        monkeypatch.setattr(realtime, "_state", None)
