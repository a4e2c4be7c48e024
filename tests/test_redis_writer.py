"""core.redis.PipelineWriter on a real Redis: order, replies, held blocks, faults."""

import threading
import uuid
from concurrent.futures import Future

import pytest
import redis
from django.conf import settings

from core.redis import INLINE_SEND_MAX_BYTES, PipelineWriter
from tests.polling import wait_for

pytestmark = pytest.mark.needs_services


class RecordingConnection(redis.Connection):
    """A real connection that notes which thread sent each write, and how many commands it held."""

    sends: list[tuple[str, int]] = []

    def send_packed_command(self, command, check_health=True):
        size = sum(map(len, command)) if isinstance(command, list) else len(command)
        type(self).sends.append((threading.current_thread().name, size))
        super().send_packed_command(command, check_health)


@pytest.fixture
def client():
    RecordingConnection.sends = []
    pool = redis.ConnectionPool.from_url(settings.REDIS_URL, connection_class=RecordingConnection,
                                         client_name=f"writer-test-{uuid.uuid4().hex[:8]}")
    yield redis.Redis(connection_pool=pool)
    pool.disconnect()


@pytest.fixture
def reader():
    """Checks on a connection of their own: the writer's client names only the writer's."""
    reader = redis.Redis.from_url(settings.REDIS_URL)
    yield reader
    reader.close()


def xadd(stream: str, value: str):
    return lambda pipe: pipe.xadd(stream, {"v": value})


def connected(client, first: str) -> tuple[PipelineWriter, str]:
    """A writer whose thread has connected, by writing ``first`` to a fresh stream (returned)."""
    writer = PipelineWriter(client, name="test-writer")
    stream = f"t:{uuid.uuid4().hex}"
    done = Future()
    writer.put(xadd(stream, first), done)
    done.result(timeout=10)
    return writer, stream


def test_puts_from_many_threads_land_in_put_order_each_with_its_reply(client, reader):
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
        entries = reader.xrange(stream)
        assert [fields[b"v"] for _, fields in entries] == [str(i).encode() for i in range(50)]
        assert ids == [entry_id for entry_id, _ in entries]


def test_a_held_block_is_sent_in_one_write_by_its_own_thread_at_its_end(client, reader):
    writer, stream = connected(client, "first")
    first, second = Future(), Future()
    RecordingConnection.sends = []
    with writer.held():
        writer.put(xadd(stream, "a"), first)
        writer.put(xadd(stream, "b"), second)
        assert not RecordingConnection.sends  # nothing leaves before the block ends
    # At the end of the block this thread wrote both, without waiting for the writer thread.
    assert RecordingConnection.sends[-1][0] == threading.current_thread().name
    assert [f.result(timeout=10) for f in (first, second)] == [e for e, _ in reader.xrange(stream)][1:]

    outside = Future()
    writer.put(xadd(stream, "c"), outside)
    outside.result(timeout=10)
    assert RecordingConnection.sends[-1][0] == "test-writer"  # a plain put: the writer thread sends it


def test_a_failing_command_fails_its_own_put_only(client, reader):
    writer = PipelineWriter(client, name="test-writer")
    wrong, right = f"t:{uuid.uuid4().hex}", f"t:{uuid.uuid4().hex}"
    reader.set(wrong, "a string, not a stream")
    failing, fine = Future(), Future()
    with writer.held():  # one write, both commands
        writer.put(xadd(wrong, "x"), failing)
        writer.put(xadd(right, "y"), fine)
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        failing.result(timeout=10)
    assert fine.result(timeout=10) == reader.xrange(right)[0][0]


def _kill(client) -> None:
    """Close the writer's connection from the server's side (as a restart or an idle timeout does)."""
    admin = redis.Redis.from_url(settings.REDIS_URL)
    name = client.connection_pool.connection_kwargs["client_name"]
    (victim,) = [c for c in admin.client_list() if c["name"] == name]
    admin.client_kill_filter(_id=victim["id"])
    wait_for(lambda: not [c for c in admin.client_list() if c["id"] == victim["id"]], timeout=10,
             interval=0.01, what="the killed connection to close")


def test_after_the_server_closes_the_connection_the_next_writes_reconnect_and_land(client, reader):
    writer, stream = connected(client, "before")

    _kill(client)
    plain = Future()
    writer.put(xadd(stream, "plain"), plain)
    assert plain.result(timeout=10) == reader.xrange(stream)[-1][0]

    _kill(client)
    # A held block's thread finds the connection closed and leaves the reconnect to
    # the writer thread (a scheduler never waits on a connect).
    RecordingConnection.sends = []
    held = Future()
    with writer.held():
        writer.put(xadd(stream, "held"), held)
    held_id = held.result(timeout=10)
    assert {thread for thread, _ in RecordingConnection.sends} == {"test-writer"}  # its connect too
    assert [fields[b"v"] for _, fields in reader.xrange(stream)] == [b"before", b"plain", b"held"]
    assert reader.xrange(stream)[-1][0] == held_id


def test_a_large_held_batch_goes_through_the_writer_thread_in_order(client, reader):
    writer, stream = connected(client, "warm")
    RecordingConnection.sends = []
    big, small = Future(), Future()
    with writer.held():
        writer.put(xadd(stream, "x" * (INLINE_SEND_MAX_BYTES + 1)), big)
    with writer.held():
        writer.put(xadd(stream, "small"), small)
    ids = [big.result(timeout=10), small.result(timeout=10)]
    assert ids == [entry_id for entry_id, _ in reader.xrange(stream)][1:]
    assert [thread for thread, size in RecordingConnection.sends if size > INLINE_SEND_MAX_BYTES] == \
        ["test-writer"]  # the held thread must not wait for Redis to read a large write


def test_a_failing_add_fails_its_batch_and_the_writer_goes_on(client, reader):
    writer = PipelineWriter(client, name="test-writer")
    stream = f"t:{uuid.uuid4().hex}"
    broken, queues_nothing, after = Future(), Future(), Future()
    writer.put(lambda pipe: 1 / 0, broken)
    with pytest.raises(ZeroDivisionError):
        broken.result(timeout=10)
    writer.put(lambda pipe: None, queues_nothing)
    with pytest.raises(ValueError, match="queued no command"):
        queues_nothing.result(timeout=10)
    writer.put(xadd(stream, "after"), after)
    assert after.result(timeout=10) == reader.xrange(stream)[0][0]
