from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"

    def ready(self):
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_save, pre_save

        from .keycache import key_saved, owner_deactivated
        from .models import ApiKey

        pre_save.connect(owner_deactivated, sender=get_user_model(), dispatch_uid="keys-of-deactivated")
        post_save.connect(key_saved, sender=ApiKey, dispatch_uid="revoked-keys")
