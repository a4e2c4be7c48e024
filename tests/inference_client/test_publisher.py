"""The gateway's publisher: what one turn of the event loop publishes goes
together; inline on the event loop while the broker connection is known good,
through its thread otherwise (the first publish, one that cannot be a plain
write, every one after a failure until the thread succeeds again).

The two callables stand in for kombu here only to record which thread ran them;
tests/inference_worker/test_celery_worker.py and test_service_faults.py drive the
real one against RabbitMQ."""

import asyncio
import threading

import pytest

from inference_client.publisher import Publisher


class Broker:
    """Records the thread of every publish; ``inline`` and ``fail`` steer the next ones."""

    def __init__(self):
        self.sent: list[tuple[str, str]] = []  # (item, "loop" or "thread")
        self.calls: list[list[str]] = []       # the items of each inline publish
        self.inline = True       # publish_now can be a plain write
        self.fail_now = False    # publish_now raises (the connection broke)
        self.fail_batch = False  # the thread's publish fails too
        self.loop_thread = threading.get_ident()

    def where(self) -> str:
        return "loop" if threading.get_ident() == self.loop_thread else "thread"

    def publish_now(self, items) -> bool:
        if self.fail_now:
            raise ConnectionResetError("broker went away")
        if not self.inline:
            return False
        self.calls.append(items)
        self.sent += [(item, self.where()) for item in items]
        return True

    def publish_batch(self, items):
        if self.fail_batch:
            return [ConnectionRefusedError("no broker")] * len(items)
        self.sent += [(item, self.where()) for item in items]
        return [None] * len(items)


def run(coro):
    return asyncio.run(coro)


def test_should_publish_the_first_through_the_thread_and_the_next_inline():
    async def scenario():
        broker = Broker()
        publisher = Publisher(broker.publish_batch, broker.publish_now)
        await publisher.publish("first")
        await publisher.publish("second")
        await publisher.publish("third")
        return broker.sent

    assert run(scenario()) == [("first", "thread"), ("second", "loop"), ("third", "loop")]


def test_should_leave_to_the_thread_what_cannot_be_a_plain_write():
    async def scenario():
        broker = Broker()
        publisher = Publisher(broker.publish_batch, broker.publish_now)
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
        publisher = Publisher(broker.publish_batch, broker.publish_now)
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

        publisher = Publisher(slow_batch, broker.publish_now)
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
        publisher = Publisher(broker.publish_batch, broker.publish_now)
        await publisher.publish("warm")
        await asyncio.gather(*(publisher.publish(name) for name in ("a", "b", "c")))
        await publisher.publish("alone")
        return broker.calls

    assert run(scenario()) == [["a", "b", "c"], ["alone"]]


def test_should_answer_each_publisher_of_a_turn_even_if_one_went_away():
    async def scenario():
        broker = Broker()
        publisher = Publisher(broker.publish_batch, broker.publish_now)
        await publisher.publish("warm")
        gone = asyncio.ensure_future(publisher.publish("gone"))
        stays = asyncio.ensure_future(publisher.publish("stays"))
        await asyncio.sleep(0)  # both gathered
        gone.cancel()           # its client disconnected before the turn ended
        await asyncio.wait_for(stays, 5)
        return broker.calls, gone.cancelled()

    assert run(scenario()) == ([["gone", "stays"]], True)
