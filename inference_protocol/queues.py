"""Celery names shared by the gateway (which publishes) and the workers (which consume)."""

QUEUE_PREFIX = "gpu."
GENERATE_TASK = "inference.generate"


def queue_for(model: str) -> str:
    return f"{QUEUE_PREFIX}{model}"


def model_of_queue(queue: str) -> str | None:
    return queue[len(QUEUE_PREFIX):] if queue.startswith(QUEUE_PREFIX) else None
