"""Ephemeral chat state: presence and send-rate buckets.

Redis when REDIS_URL is set (shared by every server process); process memory in
the embedded default. Nothing here touches the database.
"""

import threading
import time

from django.conf import settings

from core.redis import get_aredis, get_redis

# Token bucket, atomic in Redis. Uses Redis' own clock so servers with skewed
# clocks share one bucket correctly. A negative cost refunds. With a presence key as
# KEYS[2] it also counts that user's live connections (scores past ARGV[4]), so a
# send learns in the same round trip whether the sender has other tabs to echo to.
# Returns {allowed, seconds until one token, live connections}.
TOKEN_BUCKET_LUA = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(b[1]) or burst
local ts = tonumber(b[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate)
local allowed = 0
local retry = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
else
  retry = (cost - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', tostring(math.min(burst, tokens)), 'ts', tostring(now))
redis.call('EXPIRE', KEYS[1], math.ceil(burst / rate) + 1)
local conns = 0
if KEYS[2] then
  conns = redis.call('ZCOUNT', KEYS[2], ARGV[4], '+inf')
end
return {allowed, tostring(retry), conns}
"""


def _bucket_key(user_id: int) -> str:
    return f"chat:sendrate:{user_id}"


def _presence_key(user_id: int) -> str:
    return f"chat:presence:{user_id}"


class RedisState:
    """Presence is a sorted set per user: member = connection, score = expiry time.
    The key's own TTL cleans up users whose every connection vanished."""

    def __init__(self):
        self._bucket = get_redis().register_script(TOKEN_BUCKET_LUA)

    def _aio(self):
        return get_aredis()

    def _bucket_args(self, user_id: int, cost: int) -> dict:
        return {"keys": [_bucket_key(user_id), _presence_key(user_id)],
                "args": [settings.CHAT_SEND_RATE, settings.CHAT_SEND_BURST, cost, time.time()]}

    async def take_send_token_async(self, user_id: int, *, cost: int = 1) -> tuple[bool, float, int]:
        """As take_send_token, on the caller's loop."""
        script = self._aio().register_script(TOKEN_BUCKET_LUA)  # NOSCRIPT-safe; sha computed locally
        allowed, retry, conns = await script(**self._bucket_args(user_id, cost))
        return bool(allowed), float(retry), int(conns)

    def take_send_token(self, user_id: int, *, cost: int = 1) -> tuple[bool, float, int]:
        """(allowed, seconds until a token, the user's live connections); a negative
        cost refunds."""
        allowed, retry, conns = self._bucket(**self._bucket_args(user_id, cost))
        return bool(allowed), float(retry), int(conns)

    async def heartbeat(self, user_id: int, conn: str) -> bool:
        """Marks the connection alive; returns True if the user was offline before."""
        now, ttl = time.time(), settings.CHAT_PRESENCE_TTL_SECONDS
        key = _presence_key(user_id)
        async with self._aio().pipeline(transaction=True) as pipe:
            pipe.zremrangebyscore(key, "-inf", now)
            pipe.zcard(key)
            pipe.zadd(key, {conn: now + ttl})
            pipe.expire(key, ttl)
            _, before, _, _ = await pipe.execute()
        return before == 0

    async def leave(self, user_id: int, conn: str) -> bool:
        """Drops the connection; returns True if the user has no live connection left."""
        key = _presence_key(user_id)
        async with self._aio().pipeline(transaction=True) as pipe:
            pipe.zrem(key, conn)
            pipe.zcount(key, time.time(), "+inf")
            _, left = await pipe.execute()
        return left == 0

    async def online(self, user_ids: list[int]) -> dict[int, bool]:
        if not user_ids:
            return {}
        now = time.time()
        async with self._aio().pipeline(transaction=False) as pipe:
            for uid in user_ids:
                pipe.zcount(_presence_key(uid), now, "+inf")
            counts = await pipe.execute()
        return {uid: count > 0 for uid, count in zip(user_ids, counts, strict=True)}

    async def claim(self, key: str, seconds: int) -> bool:
        """True at most once per `seconds` for a key (gates last_seen writes)."""
        return bool(await self._aio().set(f"chat:{key}", "1", nx=True, ex=seconds))


class MemoryState:
    """Same contract in one process, for the embedded default."""

    def __init__(self):
        self._lock = threading.Lock()
        self._buckets: dict[int, tuple[float, float]] = {}
        self._presence: dict[int, dict[str, float]] = {}
        self._claims: dict[str, float] = {}

    def take_send_token(self, user_id: int, *, cost: int = 1) -> tuple[bool, float, int]:
        rate, burst = settings.CHAT_SEND_RATE, settings.CHAT_SEND_BURST
        with self._lock:
            now = time.monotonic()
            tokens, ts = self._buckets.get(user_id, (burst, now))
            tokens = min(burst, tokens + (now - ts) * rate)
            allowed = tokens >= cost
            self._buckets[user_id] = (min(burst, tokens - cost) if allowed else tokens, now)
            return allowed, 0.0 if allowed else (cost - tokens) / rate, len(self._live(user_id, time.time()))

    async def take_send_token_async(self, user_id: int, *, cost: int = 1) -> tuple[bool, float, int]:
        return self.take_send_token(user_id, cost=cost)

    def _live(self, user_id: int, now: float) -> dict[str, float]:
        conns = {c: exp for c, exp in self._presence.get(user_id, {}).items() if exp > now}
        self._presence[user_id] = conns
        return conns

    async def heartbeat(self, user_id: int, conn: str) -> bool:
        with self._lock:
            now = time.time()
            conns = self._live(user_id, now)
            before = len(conns)
            conns[conn] = now + settings.CHAT_PRESENCE_TTL_SECONDS
            return before == 0

    async def leave(self, user_id: int, conn: str) -> bool:
        with self._lock:
            conns = self._live(user_id, time.time())
            conns.pop(conn, None)
            return not conns

    async def online(self, user_ids: list[int]) -> dict[int, bool]:
        with self._lock:
            now = time.time()
            return {uid: bool(self._live(uid, now)) for uid in user_ids}

    async def claim(self, key: str, seconds: int) -> bool:
        with self._lock:
            now = time.monotonic()
            if self._claims.get(key, 0) > now:
                return False
            self._claims[key] = now + seconds
            return True


_state = None


def state():
    global _state
    if _state is None:
        _state = RedisState() if settings.REDIS_URL else MemoryState()
    return _state
