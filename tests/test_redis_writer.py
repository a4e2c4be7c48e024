"""core.redis.PipelineWriter on a real Redis: order, replies, held blocks, faults."""

import threading
import uuid
from concurrent.futures import Future

import pytest
import redis
from django.conf import settings

from core.redis import PipelineWriter

pytestmark = pytest.mark.needs_services


class RecordingConnection(redis.Connection):
    """A real connection that notes which thread sent each write, and how many commands it held."""

    sends: list[tuple[str, int]] = []

    def send_packed_command(self, command, check_health=True):
        type(self).sends.append((threading.current_thread().name, len(command)))
        super().send_packed_command(command, check_health)


@pytest.fixture
def client():
    RecordingConnection.sends = []
    pool = redis.ConnectionPool.from_url(settings.REDIS_URL, connection_class=RecordingConnection,
                                         client_name=f"writer-test-{uuid.uuid4().hex[:8]}")
    yield redis.Redis(connection_pool=pool)
    pool.disconnect()


def xadd(stream: str, value: str):
    return lambda pipe: pipe.xadd(stream, {"v": value})


def test_puts_from_many_threads_land_in_put_order_each_with_its_reply(client):
    writer = PipelineWriter(client, name="test-writer")
    streams = [f"t:{uuid.uuid4().hex}" for _ in range(4)]
    replies: dict[str, list[Future]] = {s: [] for s in streams}

    def produce(stream: str) -> None:
        for i in range(50):
            done: Future = Future()
            replies[stream].append(done)
            writer.put(xadd(stream, str(i)), done)

    threads = [threading.Thread(target=produce, args=(s,)) for s in streams]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for stream in streams:
        ids = [done.result(timeout=10) for done in replies[stream]]
        entries = client.xrange(stream)
        assert [fields[b"v"] for _, fields in entries] == [str(i).encode() for i in range(50)]
        assert ids == [entry_id for entry_id, _ in entries]


def test_a_held_block_is_sent_in_one_write_by_its_own_thread_at_its_end(client):
    writer = PipelineWriter(client, name="test-writer")
    stream = f"t:{uuid.uuid4().hex}"
    connected = Future()
    writer.put(xadd(stream, "first"), connected)  # the writer thread connects
    connected.result(timeout=10)
    first, second = Future(), Future()
    RecordingConnection.sends = []
    with writer.held():
        writer.put(xadd(stream, "a"), first)
        writer.put(xadd(stream, "b"), second)
        assert not RecordingConnection.sends  # nothing leaves before the block ends
    # At the end of the block this thread wrote both, without waiting for the writer thread.
    assert RecordingConnection.sends[-1][0] == threading.current_thread().name
    assert [f.result(timeout=10) for f in (first, second)] == [e for e, _ in client.xrange(stream)][1:]

    outside = Future()
    writer.put(xadd(stream, "c"), outside)
    outside.result(timeout=10)
    assert RecordingConnection.sends[-1][0] == "test-writer"  # a plain put: the writer thread sends it


def test_a_failing_command_fails_its_own_put_only(client):
    writer = PipelineWriter(client, name="test-writer")
    wrong, right = f"t:{uuid.uuid4().hex}", f"t:{uuid.uuid4().hex}"
    client.set(wrong, "a string, not a stream")
    failing, fine = Future(), Future()
    with writer.held():  # one write, both commands
        writer.put(xadd(wrong, "x"), failing)
        writer.put(xadd(right, "y"), fine)
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        failing.result(timeout=10)
    assert fine.result(timeout=10) == client.xrange(right)[0][0]


def test_a_killed_connection_fails_the_write_in_flight_and_the_next_put_reconnects(client):
    writer = PipelineWriter(client, name="test-writer")
    stream = f"t:{uuid.uuid4().hex}"
    before = Future()
    writer.put(xadd(stream, "before"), before)
    before.result(timeout=10)
    name = client.connection_pool.connection_kwargs["client_name"]
    (victim,) = [c for c in redis.Redis.from_url(settings.REDIS_URL).client_list() if c["name"] == name]
    redis.Redis.from_url(settings.REDIS_URL).client_kill_filter(_id=victim["id"])

    lost = Future()
    writer.put(xadd(stream, "lost"), lost)
    with pytest.raises(redis.ConnectionError):
        lost.result(timeout=10)
    # Not from a held block's thread (a scheduler must not wait on a connect): the
    # writer thread sends it, reconnecting.
    after = Future()
    with writer.held():
        writer.put(xadd(stream, "after"), after)
    after_id = after.result(timeout=10)
    assert RecordingConnection.sends[-1][0] == "test-writer"
    assert client.xrange(stream)[-1] == (after_id, {b"v": b"after"})
