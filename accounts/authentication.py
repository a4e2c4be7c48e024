"""`Authorization: Bearer <api key>` for DRF (sessions are DRF's own)."""

from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from .models import ApiKey, hash_key


def api_key_lookup(raw_key: str) -> ApiKey:
    """The active key for `raw_key`, or AuthenticationFailed saying why."""
    key = ApiKey.objects.select_related("user").filter(key_hash=hash_key(raw_key)).first()
    if key is None:
        raise exceptions.AuthenticationFailed("Invalid API key.", code="invalid_api_key")
    if key.revoked_at is not None:
        raise exceptions.AuthenticationFailed("This API key has been revoked.",
                                              code="revoked_api_key")
    if not key.user.is_active:
        raise exceptions.AuthenticationFailed("This account is disabled.", code="user_inactive")
    now = timezone.now()
    resolution = timedelta(seconds=settings.API_KEY_LAST_USED_RESOLUTION)
    if key.last_used_at is None or now - key.last_used_at > resolution:
        # Conditional UPDATE: at most one write per key per resolution window.
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        if scheme.lower() != self.keyword.lower():
            return None
        raw = raw.strip()
        if not raw or " " in raw:
            raise exceptions.AuthenticationFailed("Malformed Authorization header; expected "
                                                  "'Bearer <api key>'.", code="malformed_api_key")
        key = api_key_lookup(raw)
        return key.user, key

    def authenticate_header(self, request):
        return self.keyword


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """The schema's name for `Authorization: Bearer <api key>`."""

    target_class = ApiKeyAuthentication
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "An API key (py_...)."}
