from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class ChatConfig(AppConfig):
    name = "chat"

    def ready(self):
        # Live sockets must renew their group membership well within its expiry.
        if settings.CHANNEL_LAYER_GROUP_EXPIRY < 3 * settings.CHAT_PRESENCE_POLL_SECONDS:
            raise ImproperlyConfigured(
                f"CHANNEL_LAYER_GROUP_EXPIRY ({settings.CHANNEL_LAYER_GROUP_EXPIRY}s) must be at least three "
                f"CHAT_PRESENCE_POLL_SECONDS ({settings.CHAT_PRESENCE_POLL_SECONDS:g}s): chat renews its "
                "sockets' group memberships once per poll.")
