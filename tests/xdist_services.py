"""A pytest plugin (loaded with -p before Django's settings): under pytest-xdist,
each worker process gets services of its own, so that two workers never flush,
consume or publish into each other's.

Worker gwN (N = 0, 1, ...): PostgreSQL's test database is already its own
(pytest-django adds the worker id); Redis database DB for gw0 and 16 - N for the
others (the top ones, away from the low numbers people give their own runs); the
RabbitMQ vhost ``<vhost>-gwN`` (scripts/test.sh creates it); the S3 bucket
``<bucket>-gwN``; the config documents' namespace ``<namespace>-gwN`` (Redis
pub/sub channels ignore database numbers).
"""

import os
from urllib.parse import urlsplit, urlunsplit

_worker = os.environ.get("PYTEST_XDIST_WORKER", "")


def worker_vhost(broker_url: str, worker: str) -> str:
    """The vhost a worker's broker URL names (scripts/test.sh calls this to create it)."""
    vhost = urlsplit(broker_url).path.lstrip("/") or "default"
    return f"{vhost}-{worker}"


def _redis_url(url: str, index: int) -> str:
    parts = urlsplit(url)
    db = int(parts.path.lstrip("/") or 0) if index == 0 else 16 - index
    return urlunsplit(parts._replace(path=f"/{db}"))


def _broker_url(url: str, worker: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path="/" + worker_vhost(url, worker)))


if _worker.startswith("gw") and os.environ.get("REDIS_URL"):
    _index = int(_worker[2:])
    os.environ["REDIS_URL"] = _redis_url(os.environ["REDIS_URL"], _index)
    if os.environ.get("CELERY_BROKER_URL", "").startswith("amqp"):
        os.environ["CELERY_BROKER_URL"] = _broker_url(os.environ["CELERY_BROKER_URL"], _worker)
    if os.environ.get("S3_BUCKET"):
        os.environ["S3_BUCKET"] = f"{os.environ['S3_BUCKET']}-{_worker}"
    os.environ["CONFIG_NAMESPACE"] = f"{os.environ.get('CONFIG_NAMESPACE', 'config')}-{_worker}"
