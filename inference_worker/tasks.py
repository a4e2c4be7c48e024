"""Celery entry points of a GPU worker.

`celery -A config worker -Q gpu.<model> -P threads -c <in-flight> --prefetch-multiplier 1`:
each task thread hands its request to the process's single scheduler and
waits, so many in-flight tasks form one batch; -c bounds the requests held at
once (set it to at least the engine's max batch size, so a full batch can be
in the worker).
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown

from inference_worker.events import RedisEventLog
from inference_worker.generation import GenerationRequest, run_generation
from inference_worker.heartbeat import HeartbeatThread
from inference_worker.runtime import get_scheduler, stop_all

logger = logging.getLogger(__name__)
QUEUE_PREFIX = "gpu."
_heartbeat: HeartbeatThread | None = None


def queue_for(model: str) -> str:
    return f"{QUEUE_PREFIX}{model}"


@shared_task(bind=True, name="inference.generate", acks_late=True, reject_on_worker_lost=True,
             ignore_result=True)
def generate(self, request: dict) -> dict:
    attempt = 1 + int(bool(self.request.delivery_info.get("redelivered")))
    return run_generation(GenerationRequest(**request), RedisEventLog(), attempt=attempt)


@worker_ready.connect
def load_models(sender, **kwargs):
    """Load the model of every gpu.<model> queue this worker consumes, then start
    heartbeats: a worker that cannot load its model never advertises it."""
    global _heartbeat
    queues = sender.app.amqp.queues.consume_from or {}
    for name in list(queues):
        if name.startswith(QUEUE_PREFIX):
            model = name[len(QUEUE_PREFIX):]
            try:
                get_scheduler(model)
            except Exception:
                logger.exception("cannot load model %s: this worker will not serve it", model)
                sender.cancel_task_queue(name)  # leave its tasks to workers that can
    _heartbeat = HeartbeatThread()
    _heartbeat.start()


@worker_shutdown.connect
def stop_models(**kwargs):
    if _heartbeat is not None:
        _heartbeat.stop()
    stop_all()
