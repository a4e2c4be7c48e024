"""The gateway's publisher: what one turn of the event loop publishes goes
together; inline on the event loop while the broker connection is known good,
through its thread otherwise (the first publish, one that cannot be a plain
write, every one after a failure until the thread succeeds again).

Writes settle SETTLE_S later, or at once after a failure: those whose connection
closed meanwhile are handed to on_lost.

The callables stand in for kombu here only to record which thread ran them and
to steer which connection is open; tests/inference_worker/test_celery_worker.py
and test_service_faults.py drive the real one against RabbitMQ (a write the
broker never read, too)."""

import asyncio
import threading

import pytest

from inference_client.publisher import SETTLE_S, Publisher
from tests.polling import wait_for


class Broker:
    """Records the thread of every publish; ``inline`` and ``fail`` steer the next ones."""

    def __init__(self):
        self.sent: list[tuple[str, str]] = []  # (item, "loop" or "thread")
        self.calls: list[list[str]] = []       # the items of each inline publish
        self.inline = True       # publish_now can be a plain write
        self.fail_now = False    # publish_now raises (the connection broke)
        self.fail_batch = False  # the thread's publish fails too
        self.loop_thread = threading.get_ident()
        self.connection = 1      # the connection writes go on now
        self.closed: set[int] = set()
        self.lost: list[str] = []
        self.lost_seen = threading.Event()

    def where(self) -> str:
        return "loop" if threading.get_ident() == self.loop_thread else "thread"

    def publish_now(self, items):
        if self.fail_now:
            raise ConnectionResetError("broker went away")
        if not self.inline:
            return None
        self.calls.append(items)
        self.sent += [(item, self.where()) for item in items]
        return self.connection

    def publish_batch(self, items):
        if self.fail_batch:
            return None, [ConnectionRefusedError("no broker")] * len(items)
        self.sent += [(item, self.where()) for item in items]
        return self.connection, [None] * len(items)

    def alive(self, connection) -> bool:
        return connection not in self.closed

    def on_lost(self, items) -> None:
        self.lost += items
        self.lost_seen.set()

    def publisher(self, publish_batch=None) -> Publisher:
        return Publisher(publish_batch or self.publish_batch, self.publish_now, self.alive, self.on_lost)


def run(coro):
    return asyncio.run(coro)


def test_should_publish_the_first_through_the_thread_and_the_next_inline():
    async def scenario():
        broker = Broker()
        publisher = broker.publisher()
        await publisher.publish("first")
        await publisher.publish("second")
        await publisher.publish("third")
        return broker.sent

    assert run(scenario()) == [("first", "thread"), ("second", "loop"), ("third", "loop")]


def test_should_leave_to_the_thread_what_cannot_be_a_plain_write():
    async def scenario():
        broker = Broker()
        publisher = broker.publisher()
        await publisher.publish("connects")
        broker.inline = False  # e.g. a queue to declare, or no connected producer
        await publisher.publish("declares")
        broker.inline = True
        await publisher.publish("plain")
        return broker.sent

    assert run(scenario()) == [("connects", "thread"), ("declares", "thread"), ("plain", "loop")]


def test_should_retry_a_failed_inline_publish_on_the_thread_and_stay_there_until_it_succeeds():
    async def scenario():
        broker = Broker()
        publisher = broker.publisher()
        await publisher.publish("warm")
        broker.fail_now = broker.fail_batch = True
        with pytest.raises(ConnectionRefusedError):
            await publisher.publish("lost")  # inline failed, then the thread's retry too
        broker.fail_now = False  # the socket would take writes again: not trusted yet
        with pytest.raises(ConnectionRefusedError):
            await publisher.publish("still away")
        broker.fail_batch = False
        await publisher.publish("back")
        await publisher.publish("inline again")
        return broker.sent

    assert run(scenario()) == [("warm", "thread"), ("back", "thread"), ("inline again", "loop")]


def test_should_queue_for_the_thread_while_it_is_publishing():
    async def scenario():
        broker = Broker()
        release, publishing = threading.Event(), threading.Event()
        plain = broker.publish_batch

        def slow_batch(items):
            publishing.set()
            release.wait(5)
            return plain(items)

        publisher = broker.publisher(slow_batch)
        release.set()
        await asyncio.wait_for(publisher.publish("warm"), 5)
        release.clear()
        publishing.clear()
        broker.inline = False
        held = asyncio.ensure_future(publisher.publish("held"))  # to the thread, which blocks
        assert await asyncio.to_thread(publishing.wait, 5)
        broker.inline = True
        behind = asyncio.ensure_future(publisher.publish("behind it"))
        await asyncio.sleep(0)  # its turn ends: the thread holds the broker, so it must queue
        await asyncio.sleep(0)
        assert not behind.done()
        release.set()
        await asyncio.wait_for(asyncio.gather(held, behind), 5)
        return broker.sent

    assert run(scenario()) == [("warm", "thread"), ("held", "thread"), ("behind it", "thread")]


def test_should_send_what_one_turn_of_the_loop_published_in_one_inline_call():
    async def scenario():
        broker = Broker()
        publisher = broker.publisher()
        await publisher.publish("warm")
        await asyncio.gather(*(publisher.publish(name) for name in ("a", "b", "c")))
        await publisher.publish("alone")
        return broker.calls

    assert run(scenario()) == [["a", "b", "c"], ["alone"]]


def test_should_answer_each_publisher_of_a_turn_even_if_one_went_away():
    async def scenario():
        broker = Broker()
        publisher = broker.publisher()
        await publisher.publish("warm")
        gone = asyncio.ensure_future(publisher.publish("gone"))
        stays = asyncio.ensure_future(publisher.publish("stays"))
        await asyncio.sleep(0)  # both gathered
        gone.cancel()           # its client disconnected before the turn ended
        await asyncio.wait_for(stays, 5)
        return broker.calls, gone.cancelled()

    assert run(scenario()) == ([["gone", "stays"]], True)


def test_should_hand_over_the_writes_whose_connection_closed_before_they_settled():
    async def scenario():
        broker = Broker()
        publisher = broker.publisher()
        await publisher.publish("warm")              # on connection 1, which stays open
        await publisher.publish("written")           # inline on 1
        broker.connection = 2
        await publisher.publish("on two")
        broker.closed.add(2)                         # 2 breaks before "on two" settled
        assert await asyncio.to_thread(broker.lost_seen.wait, 5)
        return broker.lost

    assert run(scenario()) == ["on two"]


def test_should_settle_at_once_after_a_failure_keeping_what_went_on_an_open_connection():
    async def scenario():
        broker = Broker()
        publisher = broker.publisher()
        await publisher.publish("warm")
        await publisher.publish("kept")              # inline on 1, which stays open
        broker.connection = 2
        await publisher.publish("dropped")           # inline on 2...
        broker.closed.add(2)                         # ...which the link drops
        broker.fail_now = broker.fail_batch = True
        with pytest.raises(ConnectionRefusedError):
            await publisher.publish("refused")       # the next publish fails: no waiting for SETTLE_S
        assert await asyncio.to_thread(broker.lost_seen.wait, SETTLE_S / 2)
        return broker.lost

    assert run(scenario()) == ["dropped"]


def test_should_settle_an_inline_write_made_while_the_thread_had_nothing_to_settle():
    async def scenario():
        broker = Broker()
        publisher = broker.publisher()
        await publisher.publish("warm")
        await asyncio.to_thread(wait_for, lambda: not publisher._unsettled, 5, 0.01, "warm settled")
        broker.connection = 2
        await publisher.publish("later")             # inline, the thread idle without a timeout
        broker.closed.add(2)
        assert await asyncio.to_thread(broker.lost_seen.wait, SETTLE_S * 4)
        return broker.lost

    assert run(scenario()) == ["later"]
