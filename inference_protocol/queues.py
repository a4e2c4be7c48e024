"""Celery names shared by the gateway (which publishes) and the workers (which consume)."""

QUEUE_PREFIX = "gpu."
GENERATE_TASK = "inference.generate"             # args: [one request]
GENERATE_MANY_TASK = "inference.generate_many"   # args: [[requests]], published together
# A publisher declares a queue with a publish at most once per this long: such a
# publish waits for the broker's answer, so it is not made inline on the event
# loop (inference_client/backend.py).
QUEUE_REDECLARE_S = 15.0


def queue_for(model: str) -> str:
    return f"{QUEUE_PREFIX}{model}"


def model_of_queue(queue: str) -> str | None:
    """The model of a queue ``gpu.<model>`` or ``gpu.<model>@<version>`` (the
    served name, version included), None for other queues."""
    if not queue.startswith(QUEUE_PREFIX):
        return None
    return queue[len(QUEUE_PREFIX):]
