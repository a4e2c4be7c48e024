"""Channel layer: Redis (channels-redis) when REDIS_URL is set, else in-memory.

The in-memory layer works within one process only: fine for the embedded
default, wrong for several server processes.
"""

from core.env import env_int

from .base import REDIS_URL

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # channels_redis keeps one Redis list per server process for all of its
            # sockets, so `capacity` bounds the whole process's backlog: a burst past
            # it drops live pushes (chat recovers them from the inbox, but late).
            "CONFIG": {"hosts": [REDIS_URL], "capacity": env_int("CHANNEL_LAYER_CAPACITY", 10_000),
                       "expiry": 30},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
