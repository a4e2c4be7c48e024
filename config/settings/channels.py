"""Channel layer: Redis (channels-redis) when REDIS_URL is set, else in-memory.

The in-memory layer works within one process only: fine for the embedded
default, wrong for several server processes.
"""

from core.env import env_int

from .base import REDIS_URL

CHANNEL_LAYER_GROUP_EXPIRY = env_int("CHANNEL_LAYER_GROUP_EXPIRY", 60)
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # channels_redis keeps one Redis list per server process for all of its
            # sockets, so `capacity` bounds the whole process's backlog: a burst past
            # it drops live pushes (chat recovers them from the inbox, but late).
            # group_expiry: a membership not renewed this long is dropped. Chat
            # renews its sockets' every CHAT_PRESENCE_POLL_SECONDS (chat/hub.py), so
            # a crashed server's channels leave their groups after this, not a day.
            "CONFIG": {"hosts": [REDIS_URL], "capacity": env_int("CHANNEL_LAYER_CAPACITY", 10_000),
                       "expiry": 30, "group_expiry": CHANNEL_LAYER_GROUP_EXPIRY},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer",
                                  "CONFIG": {"group_expiry": CHANNEL_LAYER_GROUP_EXPIRY}}}
