"""API keys as a hot path sees them: looked up in the database once, then
served from process memory for KEY_CACHE_TTL_S.

The database stays the truth. Revocation must still hold on the very next
request in every process, so revoking (or deactivating the key's owner) also
writes a revocation mark in Redis, ``revoked_mark(key_id)``, with a TTL longer
than the cache's: the gateway's admission script checks it in the same round
trip as the rate limits. In the embedded default (one process, no Redis)
revoking drops the process's own entry instead.

Browser sessions on /v1 have no key: their account's tier is cached here the
same way (``cached_account_tier``), and changing it (accounts.services.
account_tier_set) drops this process's copy at once, every other within
KEY_CACHE_TTL_S, as for a key's tier.
"""

from __future__ import annotations

import asyncio
import time

from core.commit import after_commit
from core.redis import enabled as redis_enabled
from core.redis import get_redis

from .models import ApiKey, hash_key

# How long a looked-up key is trusted without the database (seconds).
KEY_CACHE_TTL_S = 30.0
# A mark outlives every cached copy of its key (and then some).
REVOKED_MARK_TTL_S = int(KEY_CACHE_TTL_S) + 60
_MAX_ENTRIES = 100_000

_cache: dict[str, tuple[float, ApiKey]] = {}        # key hash -> (expires at, key)
_inflight: dict[str, asyncio.Future] = {}           # one database lookup per key at a time
_tiers: dict[int, tuple[float, str]] = {}           # user id -> (expires at, the account's tier)


def revoked_mark(key_id: int) -> str:
    return f"apikey:revoked:{key_id}"


async def cached_key_lookup(raw_key: str, lookup) -> ApiKey:
    """The active key for ``raw_key``. ``lookup(raw_key)`` is awaited on a miss
    (a database read that raises AuthenticationFailed for bad keys; failures
    are not cached). Concurrent misses for one key share one lookup."""
    digest = hash_key(raw_key)
    entry = _cache.get(digest)
    now = time.monotonic()
    if entry is not None and entry[0] > now:
        return entry[1]
    pending = _inflight.get(digest)
    if pending is not None:
        return await asyncio.shield(pending)
    future = asyncio.get_running_loop().create_future()
    _inflight[digest] = future
    try:
        key = await lookup(raw_key)
    except BaseException as exc:
        future.set_exception(exc)
        future.exception()  # retrieved: waiters re-raise it, nobody else must
        raise
    else:
        if len(_cache) >= _MAX_ENTRIES:
            _cache.clear()  # rare (that many live keys in one process): start over
        _cache[digest] = (now + KEY_CACHE_TTL_S, key)
        future.set_result(key)
        return key
    finally:
        del _inflight[digest]


def keys_revoked(key_ids: list[int]) -> None:
    """Called after a revocation commits: every process refuses these keys on
    its next request."""
    if not key_ids:
        return
    ids = set(key_ids)
    for digest, (_, key) in list(_cache.items()):
        if key.pk in ids:
            _cache.pop(digest, None)
    if redis_enabled():
        pipe = get_redis().pipeline(transaction=False)
        for key_id in key_ids:
            pipe.set(revoked_mark(key_id), "1", ex=REVOKED_MARK_TTL_S)
        pipe.execute()



def keys_changed(key_ids: list[int]) -> None:
    """A key's row changed (its tier): this process reads it again on its next
    request; every other one within KEY_CACHE_TTL_S."""
    ids = set(key_ids)
    for digest, (_, key) in list(_cache.items()):
        if key.pk in ids:
            _cache.pop(digest, None)


async def cached_account_tier(user, lookup) -> str:
    """The tier of a signed-in user's account; ``lookup(user)`` (a database
    read) is awaited at most once per user per KEY_CACHE_TTL_S."""
    entry = _tiers.get(user.pk)
    now = time.monotonic()
    if entry is not None and entry[0] > now:
        return entry[1]
    tier = await lookup(user)
    if len(_tiers) >= _MAX_ENTRIES:
        _tiers.clear()
    _tiers[user.pk] = (now + KEY_CACHE_TTL_S, tier)
    return tier


def account_tier_changed(user_id: int) -> None:
    """Staff changed the account's tier: this process reads it again on its
    next session request; every other one within KEY_CACHE_TTL_S."""
    _tiers.pop(user_id, None)


def owner_deactivated(sender, instance, update_fields=None, **kwargs):
    """pre_save of users: a deactivated account's keys stop at once, like revoked ones."""
    if instance.pk is None or instance.is_active:
        return
    if update_fields is not None and "is_active" not in update_fields:
        return
    was_active = type(instance).objects.filter(pk=instance.pk, is_active=True).exists()
    if was_active:
        key_ids = list(ApiKey.objects.filter(user_id=instance.pk).values_list("pk", flat=True))
        after_commit(keys_revoked, key_ids)


def key_saved(sender, instance, **kwargs):
    """post_save of API keys: a revoked key (by the API, the admin or any
    save) is refused by every process from its next request on."""
    if instance.revoked_at is not None:
        after_commit(keys_revoked, [instance.pk])
