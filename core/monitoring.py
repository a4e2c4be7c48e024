"""Who may read /metrics and the details of /healthz: a scraper with the
METRICS_TOKEN bearer token, or a signed-in staff user. Anyone else sees only
ok/error per part of /healthz (no hosts, ports, buckets or pids)."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest

from .bearer import MalformedBearer, bearer_token


def monitoring_allowed(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    if token:
        try:
            sent = bearer_token(request.headers.get("Authorization"))
        except MalformedBearer:
            sent = None
        if sent is not None and hmac.compare_digest(sent.encode(), token.encode()):
            return True
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_active and user.is_staff)
