"""Celery entry points of a GPU worker.

`celery -A config worker -Q gpu.<model>`: each task thread hands its request to
the process's single scheduler and waits, so many in-flight tasks form one
batch. The models load before the pool is made (``prepare_models``, from
config/celery.py), so the pool's size, the requests held at once, follows from
them (inference_worker/sizing.py); -c overrides it.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from typing import Any

from celery import shared_task
from celery.signals import task_postrun, task_prerun, worker_ready, worker_shutdown, worker_shutting_down
from django.conf import settings

from core.startup import tune_gc
from inference_protocol import config
from inference_protocol.events import RedisEventLog
from inference_protocol.generation import GenerationRequest
from inference_protocol.queues import GENERATE_MANY_TASK, GENERATE_TASK, model_of_queue
from inference_worker.generation import run_generation, run_generations
from inference_worker.heartbeat import HeartbeatThread
from inference_worker.runtime import get_scheduler, stop_all
from inference_worker.sizing import worker_window

logger = logging.getLogger(__name__)
_heartbeat: HeartbeatThread | None = None


@functools.cache
def _log() -> RedisEventLog:
    return RedisEventLog()  # one per process: its cancel watcher serves every task


@shared_task(bind=True, name=GENERATE_TASK, acks_late=True, reject_on_worker_lost=True,
             ignore_result=True)
def generate(self, request: dict[str, Any]) -> dict[str, Any] | None:
    attempt = 1 + int(bool(self.request.delivery_info.get("redelivered")))
    return run_generation(GenerationRequest(**request), _log(), attempt=attempt)


@shared_task(bind=True, name=GENERATE_MANY_TASK, acks_late=True, reject_on_worker_lost=True,
             ignore_result=True)
def generate_many(self, requests: list[dict[str, Any]]) -> None:
    """Requests a gateway published in one message (inference_client/backend.py):
    acknowledged when every one of them has its terminal event, so a worker lost
    midway has the message redelivered, and the ones that finished answer from
    the log (run_generation is idempotent per request id)."""
    attempt = 1 + int(bool(self.request.delivery_info.get("redelivered")))
    run_generations([GenerationRequest(**request) for request in requests], _log(), attempt=attempt)


@dataclasses.dataclass
class _Prepared:
    schedulers: dict[str, Any]  # queue -> its model's scheduler
    failed: list[str]           # queues whose model would not load
    window: int                 # requests held at once, as sized (sizing.py)


_prepared: _Prepared | None = None


def prepare_models(queues: list[str]) -> int:
    """Load the model of every gpu.<model> queue (fetching and verifying a
    checkpoint its spec names first); returns the worker's window. Heartbeats
    start first: the node record shows a download's progress, while a model's own
    record appears only once it is loaded, so a worker that cannot load a model
    never advertises it."""
    global _heartbeat, _prepared
    if _prepared is not None:
        return _prepared.window
    config.start_watcher()  # the newest config document first: it names the models' specs
    _heartbeat = HeartbeatThread()
    _heartbeat.start()
    schedulers, failed = {}, []
    for name in queues:
        model = model_of_queue(name)
        if model is None:
            continue
        try:
            schedulers[name] = get_scheduler(model)
        except Exception:
            logger.exception("cannot load model %s: this worker will not serve it", model)
            failed.append(name)
    window = worker_window(schedulers.values(), settings.WORKER_REFILL_S)
    _prepared = _Prepared(schedulers, failed, window)
    return window


@worker_ready.connect
def load_models(sender, **kwargs):
    """Serve the queues whose models loaded (prepare_models, unless the worker
    was started without config/celery.py's hook), leave the others' tasks to
    workers that can."""
    queues = sender.app.amqp.queues.consume_from or {}
    prepare_models(list(queues))
    assert _prepared is not None
    if queues and all(model_of_queue(name) for name in queues):
        _skip_database_hooks(sender.app)
    for name in _prepared.failed:
        sender.cancel_task_queue(name)
    for scheduler in _prepared.schedulers.values():
        scheduler.deliver = _log().writer.held  # a step's events leave from the scheduler's thread
    logger.info("holding up to %d requests at once (pool %s of %d, prefetch %d; the window for %s: %d)",
                sender.initial_prefetch_count, type(sender.pool).__name__, sender.pool.num_processes,
                sender.initial_prefetch_count, ", ".join(_prepared.schedulers) or "no model",
                _prepared.window)
    tune_gc()  # start-up and the loaded models out of the collector's reach, as in a serve process


def _skip_database_hooks(app) -> None:
    """A GPU worker never touches the database, but Celery's Django fixup
    checks every connection of the task's thread before and after each task
    (a tenth of a GPU worker's CPU in a profile). Workers of other queues
    (webhooks, batches) keep it."""
    for fixup in getattr(app, "_fixups", ()):
        hooks = getattr(fixup, "_worker_fixup", None)
        if hooks is not None:
            task_prerun.disconnect(hooks.on_task_prerun)
            task_postrun.disconnect(hooks.on_task_postrun)


@worker_shutting_down.connect
def stop_advertising(**kwargs):
    """SIGTERM (a warm shutdown): Celery stops consuming and lets the tasks it
    holds finish (their batch, and the requests waiting behind it, run on; a
    message it had not started goes back to the queue with the connection).
    The worker stops heartbeating now: within a heartbeat's TTL the gateways
    count it out of the model's capacity."""
    if _heartbeat is not None:
        _heartbeat.stop()


@worker_shutdown.connect
def stop_models(**kwargs):
    if _heartbeat is not None:
        _heartbeat.stop()
    stop_all()
