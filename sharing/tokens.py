"""Link tokens: generation, hashing, resolution, and the per-address limit on
failed lookups that makes guessing pointless.

Every failure (malformed, unknown, expired, revoked) looks the same to the
caller: None here, and the same 404 upstream, so there is no oracle."""

from __future__ import annotations

import hashlib
import re
import secrets

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from core.error_codes import DomainError

from .audit import audit_record
from .models import ShareLink

TOKEN_PREFIX = "pys_"
# 32 random bytes -> 43 url-safe characters: 256 bits, well over the 128 required.
_TOKEN_RE = re.compile(r"^pys_[A-Za-z0-9_-]{43}$")


def token_generate() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _failures_key(client_addr: str) -> str:
    return f"share-token-failures:{client_addr or 'unknown'}"


def check_not_limited(client_addr: str) -> None:
    """429 with Retry-After once an address has too many failed lookups in the window."""
    key = _failures_key(client_addr)
    if (cache.get(key) or 0) < settings.SHARE_TOKEN_MAX_FAILURES:
        return
    ttl = cache.ttl(key) if hasattr(cache, "ttl") else None  # django-redis knows the real TTL
    retry = max(1, int(ttl)) if ttl else settings.SHARE_TOKEN_FAILURE_WINDOW_S
    raise DomainError("Too many invalid share links from this address; try again later.",
                      code="rate_limit_exceeded", headers={"Retry-After": str(retry)},
                      extra={"retry_after": retry})


def _record_failure(client_addr: str) -> None:
    key = _failures_key(client_addr)
    # add() sets the window only for the first failure; incr() is atomic in Redis.
    cache.add(key, 0, timeout=settings.SHARE_TOKEN_FAILURE_WINDOW_S)
    try:
        cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=settings.SHARE_TOKEN_FAILURE_WINDOW_S)


def _audit_expiry(link: ShareLink, now) -> None:
    # Conditional UPDATE: only the first request to notice the expiry records it.
    with transaction.atomic():
        if ShareLink.objects.filter(pk=link.pk, expiry_audited_at__isnull=True).update(
                expiry_audited_at=now):
            audit_record(prompt_id=link.prompt_id, dataset_id=link.dataset_id, actor=None,
                         action="link.expire", target=f"link:{link.pk}",
                         detail={"name": link.name, "expires_at": link.expires_at.isoformat()})


def links_audit_expired(**subject) -> None:
    """Record the expiry of every link of a prompt (``prompt=``) or a dataset
    (``dataset=``) that has expired unnoticed."""
    now = timezone.now()
    for link in ShareLink.objects.filter(expires_at__lte=now, expiry_audited_at__isnull=True,
                                         revoked_at__isnull=True, **subject):
        _audit_expiry(link, now)


def link_resolve(*, token, client_addr: str) -> ShareLink | None:
    """The live link for `token`, or None. Always reads the database: a link
    revoked by any process is refused on the very next request.

    A valid token is never refused: the limit counts failures per client
    address and only ever stops more failures (a 429 instead of the 404), so
    one guesser behind a shared address cannot lock out the link's holders."""
    link = None
    if isinstance(token, str) and _TOKEN_RE.fullmatch(token):
        link = ShareLink.objects.filter(token_hash=token_hash(token)).first()
    now = timezone.now()
    expired = link is not None and link.expires_at is not None and link.expires_at <= now
    if expired and link.revoked_at is None:
        _audit_expiry(link, now)
        link = None
    if link is None or link.revoked_at is not None:
        check_not_limited(client_addr)
        _record_failure(client_addr)
        return None
    return link
