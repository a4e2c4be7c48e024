"""Celery: the GPU queues.

CELERY_BROKER_URL: broker for the GPU queues; RabbitMQ redelivers a task held
by a dead worker as soon as its connection drops (Redis only after a
visibility timeout), so prefer amqp:// in production. Defaults to REDIS_URL.
With neither set, inference runs on an in-process worker thread (embedded
default) and Celery is not used.
"""

from core.env import env_bool, env_float, env_str

from .base import REDIS_URL, VAR_DIR
from .generations import REGRESSION_CHECK_INTERVAL_S
from .webhooks import WEBHOOK_QUEUE, WEBHOOK_SWEEP_INTERVAL_S

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
# No result backend: the one task ignores its result; results travel through the
# event log (inference_protocol.events).
# One (disabled) backend object per process, not one per pool thread: building it
# scans every installed package's entry points (tens of ms per thread, seen in profiles).
CELERY_RESULT_BACKEND_THREAD_SAFE = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# Workers run a thread pool (a GPU worker's task threads wait on its scheduler);
# a GPU worker sizes it to its window (inference_worker/sizing.py, config/celery.py)
# unless -c says otherwise, and one prefetched message per thread makes the window
# the prefetch count: a full next batch waits in the worker, and no worker hoards
# tasks another could start now.
CELERY_WORKER_POOL = "threads"
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Seconds from a finished request's late ack until the broker's next message is
# in the worker, on a loaded host: one term of the window (inference_worker/sizing.py).
WORKER_REFILL_S = env_float("WORKER_REFILL_S", 0.1)
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_TIMEOUT = 3
# A publish to a broker that went away fails within about a second (the
# gateway answers 503 queue_unavailable) instead of retrying for long.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2,
                                    "interval_max": 0.5}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A finished task's late ack reaches the broker at once (config/celery.py AckWake);
# false leaves Celery's own (up to the event loop's 1 s idle poll; bench/acks.py).
CELERY_ACK_WAKE = env_bool("CELERY_ACK_WAKE", True)

# Periodic tasks, published by `celery -A config beat` (one process; README).
# The webhook sweep runs on the webhooks workers; a sweep left in the queue past
# the next one's time is dropped (the next does the same work).
CELERY_BEAT_SCHEDULE = {
    "webhooks-sweep": {"task": "playground.webhooks.sweep", "schedule": WEBHOOK_SWEEP_INTERVAL_S,
                       "options": {"queue": WEBHOOK_QUEUE, "expires": WEBHOOK_SWEEP_INTERVAL_S}},
    # Generations past retention (generations/retention.py), hourly, on the same workers.
    "generations-sweep": {"task": "generations.sweep", "schedule": 3600,
                          "options": {"queue": WEBHOOK_QUEUE, "expires": 3600}},
    # The regression alarm (generations/regression.py), on the same workers.
    "generations-regression-check": {"task": "generations.regression_check",
                                     "schedule": REGRESSION_CHECK_INTERVAL_S,
                                     "options": {"queue": WEBHOOK_QUEUE,
                                                 "expires": REGRESSION_CHECK_INTERVAL_S}},
}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULER = "config.celery:BeatScheduler"

# How the gateway reaches workers: Celery queues when there is a broker, else
# worker threads in the serving process (embedded default).
INFERENCE_BACKEND = ("inference_client.backend.CeleryBackend" if CELERY_BROKER_URL
                     else "inference_worker.inprocess.InProcessBackend")
