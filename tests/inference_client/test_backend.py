"""The gateway's Celery backend against a real RabbitMQ."""

import uuid

import amqp
import pytest

from inference_client.backend import CeleryBackend
from inference_protocol.generation import GenerationRequest
from inference_protocol.queues import QUEUE_REDECLARE_S, queue_for
from tests.inference_worker.workers import delete_queues


@pytest.mark.needs_services  # a real RabbitMQ
def test_should_declare_a_queue_once_per_window_not_per_publish():
    """A declaration waits for the broker's answer: the backend declares a
    model's queue with a publish only when its last declaration is
    QUEUE_REDECLARE_S old, not with every publish."""
    from config.celery import app

    backend, model = CeleryBackend(), f"declare-{uuid.uuid4().hex[:8]}"
    name = queue_for(model)

    def request() -> GenerationRequest:
        return GenerationRequest(request_id=uuid.uuid4().hex, model=model,
                                 messages=[{"role": "user", "content": "hi"}], max_tokens=8)

    def queued() -> int | None:
        with app.connection_for_write() as conn:
            try:
                return conn.channel().queue_declare(name, passive=True).message_count
            except amqp.exceptions.NotFound:
                return None

    try:
        backend.submit(request())
        assert queued() == 1  # declared with the first publish
        delete_queues([name])
        backend.submit(request())
        assert queued() is None  # within the window: published without a declaration
        assert backend._queue(request())[1]  # so a publish may be a plain write, inline
        backend._declared_at[name] -= QUEUE_REDECLARE_S
        assert not backend._queue(request())[1]  # the window over: the next one declares
    finally:
        delete_queues([name])
