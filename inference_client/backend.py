"""The gateway's backend to GPU workers: a Celery task on the model's queue
(gpu.<model>), published by task name (the gateway imports no worker code);
events come back through the Redis event log."""

from __future__ import annotations

import functools
import socket
import time

from celery import current_app
from kombu import Queue
from kombu.entity import PERSISTENT_DELIVERY_MODE
from kombu.exceptions import LimitExceeded

from inference_client.publisher import Publisher
from inference_protocol.backend import Backend
from inference_protocol.heartbeat import read_heartbeats
from inference_protocol.queues import GENERATE_MANY_TASK, GENERATE_TASK, QUEUE_REDECLARE_S, queue_for

# An inline publish is a write to an open socket; one the broker does not take
# within this long (it stopped reading: a memory alarm) fails, and the thread retries it.
INLINE_PUBLISH_TIMEOUT_S = 0.25
# Requests published together (Publisher) go out as one message per queue, of at
# most this many: a worker holds a message's requests until the last one ends.
MAX_PER_MESSAGE = 16


class CeleryBackend(Backend):
    def __init__(self, log=None):
        super().__init__(log)
        self._declared_at: dict[str, float] = {}  # queue -> when this process last declared it

    def submit(self, request, producer=None, timeout=None, retry=True):
        """To the model's queue."""
        self._send([request], producer, self._queue(request), timeout, retry)

    def _send(self, requests, producer, route, timeout=None, retry=True):
        """One message for ``requests`` (all bound for ``route``, what ``_queue``
        answered): the task of one request, or of several (GENERATE_MANY_TASK)
        when they were published together.

        The message is Celery's own (protocol 2, from ``app.amqp.as_task_v2``),
        published with kombu straight to the queue: ``send_task``'s routing,
        option merging and signals were 40% of a publish's CPU, on the path of
        every request (bench/overhead.py), for a task whose queue is already known."""
        app = current_app
        queue, declared = route
        first = requests[0].request_id
        if len(requests) == 1:
            task, args, task_id = GENERATE_TASK, [requests[0].to_dict()], first
        else:
            task, args = GENERATE_MANY_TASK, [[request.to_dict() for request in requests]]
            task_id = f"{first}+{len(requests)}"
        # argsrepr: Celery would put a repr of the messages (user text) in the
        # headers, for logs and monitors; the request ids are enough there.
        message = app.amqp.as_task_v2(task_id, task, args=args, kwargsrepr="{}", ignore_result=True,
                                      argsrepr=f"<{len(requests)} request(s) {first}>")
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

    def _grouped(self, requests: list) -> list[tuple[tuple[Queue, bool], list]]:
        """(route, requests) per message: by queue, at most MAX_PER_MESSAGE each."""
        by_queue: dict[str, tuple[tuple[Queue, bool], list]] = {}
        for request in requests:
            route = self._queue(request)
            by_queue.setdefault(route[0].name, (route, []))[1].append(request)
        return [(route, group[i:i + MAX_PER_MESSAGE]) for route, group in by_queue.values()
                for i in range(0, len(group), MAX_PER_MESSAGE)]

    async def asubmit(self, request):
        await self._publisher.publish(request)

    @functools.cached_property
    def _publisher(self) -> Publisher:
        return Publisher(self._publish_batch, self._publish_now, _open, self._lost)

    def _publish_now(self, requests: list):
        """Publish on the caller's thread (the event loop) if it is a plain write to
        an open socket: declared queues (a declaration waits for the broker's
        answer), a connected producer (connecting waits too), each write bounded by
        INLINE_PUBLISH_TIMEOUT_S, no retry. Returns the AMQP connection written
        on; None: nothing was sent, the thread should publish them."""
        groups = self._grouped(requests)
        if not all(route[1] for route, _ in groups):
            return None
        try:
            producer = current_app.producer_pool.acquire(block=False)
        except LimitExceeded:  # every producer is out (other threads sending tasks)
            return None
        try:
            if not producer.connection.connected:
                return None
            for route, group in groups:
                # The same route: the window can't lapse in between and make this declare.
                self._send(group, producer, route, timeout=INLINE_PUBLISH_TIMEOUT_S, retry=False)
            return producer.connection.connection
        finally:
            producer.release()

    def _publish_batch(self, requests: list):
        """(the AMQP connection written on, per request None or what publishing it raised)."""
        failed: dict[str, Exception] = {}  # request id -> what publishing its message raised
        with current_app.producer_or_acquire() as producer:  # one connection for the batch
            for route, group in self._grouped(requests):
                try:
                    self._send(group, producer, route)
                except Exception as exc:  # these requests fail; the others still go
                    failed.update((request.request_id, exc) for request in group)
            connection = producer.connection.connection if producer.connection.connected else None
        return connection, [failed.get(request.request_id) for request in requests]

    def _lost(self, requests: list) -> None:
        """Requests written to a broker connection that broke before they settled
        (publisher.py): the broker may never have had them. Each ends now with a
        retryable error rather than waiting for a worker until its timeout; a
        worker that did get one finds the result written and the cancel mark, and drops it."""
        for request in requests:
            event = {"type": "error", "code": "queue_unavailable", "retry_after": 5,
                     "message": "The broker connection broke as this request was sent; try again shortly."}
            if self.log.finish(request.request_id, event):
                self.log.cancel(request.request_id)

    def live_workers(self, model=None):
        return read_heartbeats(model)


def _open(connection) -> bool:
    """Whether an AMQP connection's socket is still open: a look at it that
    takes nothing from it (py-amqp reads it only while it waits for an answer)."""
    sock = getattr(getattr(connection, "transport", None), "sock", None)
    if sock is None:
        return False
    try:
        with socket.fromfd(sock.fileno(), sock.family, sock.type) as raw:  # plain TCP under TLS too
            return raw.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:  # open, nothing to read
        return True
    except OSError:  # reset, or closed (fileno -1)
        return False
