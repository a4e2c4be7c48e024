from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"

    def ready(self):
        from django.contrib.auth import get_user_model
        from django.contrib.auth.signals import user_logged_out
        from django.db.models.signals import post_delete, post_save, pre_save

        from . import socket_access
        from .keycache import key_saved, owner_deactivated
        from .models import ApiKey

        User = get_user_model()
        pre_save.connect(owner_deactivated, sender=User, dispatch_uid="keys-of-deactivated")
        post_save.connect(key_saved, sender=ApiKey, dispatch_uid="revoked-keys")
        # Sockets end when access ends (accounts/socket_access.py).
        user_logged_out.connect(socket_access.on_logged_out, dispatch_uid="sockets-of-logout")
        pre_save.connect(socket_access.on_user_saved, sender=User, dispatch_uid="sockets-of-user-change")
        post_delete.connect(socket_access.on_user_deleted, sender=User, dispatch_uid="sockets-of-deleted")
        post_save.connect(socket_access.on_key_saved, sender=ApiKey, dispatch_uid="sockets-of-revoked-key")
