"""The gateway's backend to GPU workers: a Celery task on the model's queue
(gpu.<model>), published by task name (the gateway imports no worker code);
events come back through the Redis event log."""

from __future__ import annotations

from celery import current_app

from inference_protocol.backend import Backend
from inference_protocol.heartbeat import read_heartbeats
from inference_protocol.queues import GENERATE_TASK, queue_for


class CeleryBackend(Backend):
    def submit(self, request):
        current_app.send_task(GENERATE_TASK, args=[request.to_dict()], queue=queue_for(request.model),
                              task_id=request.request_id)

    def live_workers(self, model=None):
        return read_heartbeats(model)
