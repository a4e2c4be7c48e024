"""Channel layer: Redis (channels-redis) when REDIS_URL is set, else in-memory.

The in-memory layer works within one process only: fine for the embedded
default, wrong for several server processes.
"""

from .base import REDIS_URL

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL], "capacity": 1000, "expiry": 30},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
