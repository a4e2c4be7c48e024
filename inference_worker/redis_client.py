"""One Redis connection pool per process (the worker side has no Django cache API
for streams, scripts or SCAN)."""

import functools

import redis
from django.conf import settings


@functools.cache
def get_redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=10)
