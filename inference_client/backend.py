"""The gateway's backend to GPU workers: a Celery task on the model's queue
(gpu.<model>), published by task name (the gateway imports no worker code);
events come back through the Redis event log."""

from __future__ import annotations

import functools
import time

from celery import current_app
from kombu import Queue
from kombu.entity import PERSISTENT_DELIVERY_MODE
from kombu.exceptions import LimitExceeded

from inference_client.publisher import Publisher
from inference_protocol.backend import Backend
from inference_protocol.heartbeat import read_heartbeats
from inference_protocol.queues import GENERATE_TASK, QUEUE_REDECLARE_S, queue_for

# An inline publish is a write to an open socket; one the broker does not take
# within this long (it stopped reading: a memory alarm) fails, and the thread retries it.
INLINE_PUBLISH_TIMEOUT_S = 0.25


class CeleryBackend(Backend):
    def __init__(self, log=None):
        super().__init__(log)
        self._declared_at: dict[str, float] = {}  # queue -> when this process last declared it

    def submit(self, request, producer=None, timeout=None, retry=True, route=None):
        """To the model's queue.

        The message is Celery's own (protocol 2, from ``app.amqp.as_task_v2``),
        published with kombu straight to the queue: ``send_task``'s routing,
        option merging and signals were 40% of a publish's CPU, on the path of
        every request (bench/overhead.py), for a task whose queue is already known.
        ``route``: what ``_queue`` answered for it, if the caller asked already."""
        app = current_app
        queue, declared = route or self._queue(request)
        # argsrepr: Celery would put a repr of the messages (user text) in the
        # headers, for logs and monitors; the request id is enough there.
        message = app.amqp.as_task_v2(request.request_id, GENERATE_TASK, args=[request.to_dict()],
                                      argsrepr=f"<request {request.request_id}>", kwargsrepr="{}",
                                      ignore_result=True)
        with app.producer_or_acquire(producer) as producer:
            producer.publish(message.body, exchange=queue.exchange, routing_key=queue.routing_key,
                             headers=message.headers, serializer=app.conf.task_serializer,
                             delivery_mode=PERSISTENT_DELIVERY_MODE, declare=[] if declared else [queue],
                             timeout=timeout, retry=retry, retry_policy=app.conf.task_publish_retry_policy,
                             **message.properties)
        if not declared:
            self._declared_at[queue.name] = time.monotonic()

    def _queue(self, request) -> tuple[Queue, bool]:
        """The queue to publish to, and whether this process declared it within the window."""
        queue = current_app.amqp.queues[queue_for(request.model)]
        last = self._declared_at.get(queue.name)
        return queue, last is not None and time.monotonic() - last < QUEUE_REDECLARE_S

    async def asubmit(self, request):
        await self._publisher.publish(request)

    @functools.cached_property
    def _publisher(self) -> Publisher:
        return Publisher(self._publish_batch, self._publish_now)

    def _publish_now(self, request) -> bool:
        """Publish on the caller's thread (the event loop) if it is a plain write to
        an open socket: a declared queue (a declaration waits for the broker's
        answer), a connected producer (connecting waits too), the write bounded by
        INLINE_PUBLISH_TIMEOUT_S, no retry. False: nothing was sent, the thread
        should publish it."""
        route = self._queue(request)
        if not route[1]:
            return False
        try:
            producer = current_app.producer_pool.acquire(block=False)
        except LimitExceeded:  # every producer is out (other threads sending tasks)
            return False
        try:
            if not producer.connection.connected:
                return False
            # The same route: the window can't lapse in between and make this declare.
            self.submit(request, producer=producer, timeout=INLINE_PUBLISH_TIMEOUT_S, retry=False,
                        route=route)
        finally:
            producer.release()
        return True

    def _publish_batch(self, items: list) -> list[Exception | None]:
        errors: list[Exception | None] = []
        with current_app.producer_or_acquire() as producer:  # one connection for the batch
            for request in items:
                try:
                    self.submit(request, producer=producer)
                    errors.append(None)
                except Exception as exc:  # this request fails; the others still go
                    errors.append(exc)
        return errors

    def live_workers(self, model=None):
        return read_heartbeats(model)
