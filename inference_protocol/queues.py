"""Celery names shared by the gateway (which publishes) and the workers (which consume)."""

import functools

from kombu import Queue

QUEUE_PREFIX = "gpu."
GENERATE_TASK = "inference.generate"             # args: [one request]
GENERATE_MANY_TASK = "inference.generate_many"   # args: [[requests]], published together


def queue_for(model: str) -> str:
    return f"{QUEUE_PREFIX}{model}"


def model_of_queue(queue: str) -> str | None:
    """The model of a shared queue ``gpu.<model>`` or ``gpu.<model>@<version>`` (the
    served name, version included), None for other queues and device queues."""
    if not queue.startswith(QUEUE_PREFIX) or DEVICE_SEPARATOR in queue:
        return None
    return queue[len(QUEUE_PREFIX):]


# A device's own queue: the gateway sends it the requests it is expected to
# start soonest (inference_client/routing.py). A message that waits there
# longer than DEVICE_QUEUE_TTL_MS (its worker died or stopped consuming) is
# dead-lettered to the model's shared queue, which every worker consumes.
DEVICE_QUEUE_TTL_MS = 3000
DEVICE_SEPARATOR = "#"
# A device queue goes away this long after its last use (a consumer, or a
# declaration); a publisher that declared a queue less than DEVICE_QUEUE_REDECLARE_S
# ago knows it is still there and skips the declaration: for a device queue a
# round trip to the broker per publish that kombu never caches for an expiring
# queue (1-2 ms of the gateway's overhead per request in bench/overhead.py).
DEVICE_QUEUE_EXPIRES_MS = 60_000
DEVICE_QUEUE_REDECLARE_S = DEVICE_QUEUE_EXPIRES_MS / 1000 / 4


@functools.lru_cache(maxsize=256)  # per request on the gateway's path; a new id per worker start
def device_queue(model: str, device: str) -> Queue:
    name = f"{queue_for(model)}{DEVICE_SEPARATOR}{device}"
    return Queue(name, routing_key=name,
                 queue_arguments={"x-message-ttl": DEVICE_QUEUE_TTL_MS, "x-dead-letter-exchange": "",
                                  "x-dead-letter-routing-key": queue_for(model),
                                  "x-expires": DEVICE_QUEUE_EXPIRES_MS})
