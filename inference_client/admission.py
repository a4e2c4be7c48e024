"""Admission control: token buckets in Redis, decided by one atomic Lua script.

One request checks, in one round trip, all or nothing:
- the key's request bucket and token bucket (limits by tier, per minute);
- the model's global token bucket, whose rate, size and free-tier reserve the
  capacity controller writes into the bucket's own hash (so reading them is
  atomic with the decision); free requests may not take the last `fr` tokens;
- queue-depth backpressure: requests in flight for the model (a sorted set,
  scored by expiry so a crashed gateway's entries age out) beyond the live
  batch slots, and whether any worker is alive at all;
- that the caller's API key carries no revocation mark (accounts.keycache:
  gateways cache keys, so a revocation is enforced here, in the same round trip).
The script also claims the controller's tick (SET NX PX period), so the
controller runs lazily, at most once per period across all gateway processes.

Bucket hash fields: l = level, t = last refill (ms, Redis clock); global
buckets also hold cap, rate (per s), fr, workers, slots, rps.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from django.conf import settings

from accounts.keycache import revoked_mark
from core.redis import run_script, script
from core.vocabulary import Tier
from inference_protocol import config

_ADMIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = tonumber(ARGV[1])
local tick = 0
if redis.call('SET', KEYS[n + 2], '1', 'NX', 'PX', ARGV[2]) then tick = 1 end
if redis.call('EXISTS', KEYS[n + 3]) == 1 then return {5, 0, tick, 0} end
local g = KEYS[n]
local gi = redis.call('HMGET', g, 'cap', 'rate', 'fr', 'workers', 'slots', 'rps', 'ready')
if not gi[1] then return {4, 0, tick, 0} end
local out = {0, 0, tick, 0, gi[7] or ''}
local levels = {}
for i = 1, n do
  local base = 6 + (i - 1) * 4  -- ARGV offsets
  local cap, rate = tonumber(ARGV[base + 1]), tonumber(ARGV[base + 2])
  local cost, reserve = tonumber(ARGV[base + 3]), tonumber(ARGV[base + 4])
  if cap < 0 then cap, rate = tonumber(gi[1]), tonumber(gi[2]) end
  if reserve < 0 then reserve = tonumber(gi[3]) end
  local b = redis.call('HMGET', KEYS[i], 'l', 't')
  local level, ts = tonumber(b[1]), tonumber(b[2])
  if not level then level, ts = cap, now end
  level = math.min(cap, level + math.max(0, now - ts) * rate / 1000)
  levels[i] = {level, cap, rate, cost}
  if cost > 0 and level < cost + reserve then
    local wait = -1
    if cost + reserve <= cap and rate > 0 then wait = math.ceil((cost + reserve - level) * 1000 / rate) end
    if out[1] == 0 then out[2] = wait
    elseif out[2] >= 0 and (wait < 0 or wait > out[2]) then out[2] = wait end
    out[1] = 1
    if out[4] == 0 then out[4] = i end
  end
end
if out[1] == 0 and tonumber(ARGV[6]) == 1 then
  -- backpressure, checked after the buckets so a refusal still reports them
  if tonumber(gi[4]) == 0 then
    out[1] = 3
  else
    redis.call('ZREMRANGEBYSCORE', KEYS[n + 1], '-inf', now)
    local waiting = redis.call('ZCARD', KEYS[n + 1]) - tonumber(gi[5])
    if waiting >= tonumber(ARGV[5]) then
      out[1] = 2
      out[2] = math.ceil((waiting - tonumber(ARGV[5]) + 1) * 1000 / math.max(tonumber(gi[6]), 0.001))
    end
  end
end
if out[1] == 0 then
  for i = 1, n do
    local lv = levels[i]
    lv[1] = lv[1] - lv[4]
    redis.call('HSET', KEYS[i], 'l', lv[1], 't', now)
    redis.call('PEXPIRE', KEYS[i], math.ceil(lv[2] / math.max(lv[3], 0.001) * 1000) + 60000)
  end
  if tonumber(ARGV[6]) == 1 then
    redis.call('ZADD', KEYS[n + 1], now + tonumber(ARGV[4]), ARGV[3])
    redis.call('PEXPIRE', KEYS[n + 1], tonumber(ARGV[4]) + 60000)
  end
end
for i = 1, n do
  local lv = levels[i]
  table.insert(out, tostring(math.floor(math.max(lv[1], 0))))
  table.insert(out, math.ceil((lv[2] - lv[1]) * 1000 / math.max(lv[3], 0.001)))
  table.insert(out, tostring(lv[2]))
end
return out
"""

# Add `delta` to each of the first `nb` buckets (after refilling): a refund
# when usage was smaller than the estimate, a debt (the level may go negative)
# when larger.
_ADJUST_BODY = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 1, nb do
  local cap, rate, delta = tonumber(ARGV[i * 3 - 2]), tonumber(ARGV[i * 3 - 1]), tonumber(ARGV[i * 3])
  local b = redis.call('HMGET', KEYS[i], 'l', 't', 'cap', 'rate')
  if cap < 0 then cap, rate = tonumber(b[3]) or 0, tonumber(b[4]) or 0 end
  if b[1] and delta ~= 0 then
    local level = math.min(cap, tonumber(b[1]) + math.max(0, now - tonumber(b[2])) * rate / 1000)
    redis.call('HSET', KEYS[i], 'l', math.min(cap, level + delta), 't', now)
  end
end
"""
_ADJUST = "local nb = #KEYS\n" + _ADJUST_BODY + "return 1"

# The end of a request, all or nothing: correct the token charge (as _ADJUST),
# release its in-flight slot and append its usage record to the stream the
# usage writer stores in the database. KEYS: buckets..., inflight, stream;
# ARGV: (cap, rate, delta) per bucket, request id, record (JSON; "" for none).
_SETTLE = "local nb = #KEYS - 2\n" + _ADJUST_BODY + """
redis.call('ZREM', KEYS[nb + 1], ARGV[nb * 3 + 1])
if ARGV[nb * 3 + 2] ~= '' then redis.call('XADD', KEYS[nb + 2], '*', 'r', ARGV[nb * 3 + 2]) end
return 1
"""

# Read-only: each bucket's level now (refilled on the Redis clock, as _ADMIT
# does), without charging or writing. A bucket never used is full.
_PEEK = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i = 1, #KEYS do
  local cap, rate = tonumber(ARGV[i * 2 - 1]), tonumber(ARGV[i * 2])
  local b = redis.call('HMGET', KEYS[i], 'l', 't')
  local level = cap
  if b[1] then level = math.min(cap, tonumber(b[1]) + math.max(0, now - tonumber(b[2])) * rate / 1000) end
  table.insert(out, tostring(level))
end
return out
"""

REJECT_REASONS = {1: "rate_limit", 2: "queue_full", 3: "no_worker", 4: "uninitialised",
                  5: "key_revoked"}


@dataclasses.dataclass
class Bucket:
    key: str
    name: str            # "requests" | "tokens" | "global"
    capacity: float      # -1: read from the bucket's hash (global)
    rate: float
    cost: float
    reserve: float = 0.0  # -1: the free reserve from the hash

    def args(self) -> list[float]:
        return [self.capacity, self.rate, self.cost, self.reserve]


@dataclasses.dataclass
class Decision:
    allowed: bool
    reason: str | None           # None | rate_limit | queue_full | no_worker | uninitialised
    retry_after_ms: int          # -1: the bucket can never hold this request
    tick: bool                   # this caller owns the controller's run for this period
    failed_bucket: str | None
    buckets: dict[str, dict]     # name -> {remaining, reset_ms, limit}
    ready: frozenset = frozenset()  # versions of the model with a ready worker (capacity.tick)


def key_buckets(*, key_id: int | str, tier: str, tokens: int, snapshot=None, lane: str = "interactive"
                ) -> list[Bucket]:
    """``snapshot``: the request's config (inference_protocol.config.current()).
    ``lane`` "batch" (evaluation cells): the same buckets, but a batch request may
    not take their last BATCH_INTERACTIVE_RESERVE share, which the caller's own
    interactive requests always find left."""
    limits = (snapshot or config.current()).rate_limits[tier]
    rpm, tpm = limits["requests_per_min"], limits["tokens_per_min"]
    share = settings.BATCH_INTERACTIVE_RESERVE if lane == "batch" else 0.0
    return [Bucket(f"rl:k:{key_id}:r", "requests", rpm, rpm / 60, 1, rpm * share),
            Bucket(f"rl:k:{key_id}:t", "tokens", tpm, tpm / 60, tokens, tpm * share)]


def global_bucket(*, model: str, tier: str, tokens: int, lane: str = "interactive") -> Bucket:
    """A batch request is not charged here: the scheduler runs it only in slots
    interactive traffic leaves empty, so it takes none of the capacity they are admitted against."""
    if lane == "batch":
        return Bucket(global_key(model), "global", -1, -1, 0, 0)
    return Bucket(global_key(model), "global", -1, -1, tokens, -1 if tier == Tier.FREE else 0)


def global_key(model: str) -> str:
    return f"rl:g:{model}"


def inflight_key(model: str) -> str:
    return f"inflight:{model}"


TICK_KEY = "ctl:tick"


async def admit(*, buckets: list[Bucket], model: str, request_id: str, check_queue: bool = True,
                api_key_id: int | None = None, redis=None) -> Decision:
    """Decide atomically; the last bucket must be the model's global bucket.
    ``api_key_id``: refuse (reason key_revoked) if that key was revoked."""
    argv: list[str | float] = [
            len(buckets), max(1, int(settings.CAPACITY_CONTROLLER_PERIOD_S * 1000)), request_id,
            int(settings.INFERENCE_REQUEST_TIMEOUT_S * 1000) + 5000,
            settings.INFERENCE_MAX_QUEUE_PER_MODEL, 1 if check_queue else 0]
    for bucket in buckets:
        argv += bucket.args()
    mark = revoked_mark(api_key_id if api_key_id is not None else 0)  # no key id 0 exists
    keys = [b.key for b in buckets] + [inflight_key(model), TICK_KEY, mark]
    reply = await run_script(_ADMIT, keys, argv, redis)
    status, retry_ms, tick, failed = (int(x) for x in reply[:4])
    states = {}
    for i, bucket in enumerate(buckets if len(reply) > 4 else ()):  # none when uninitialised
        remaining, reset_ms, cap = reply[5 + 3 * i: 8 + 3 * i]
        states[bucket.name] = {"remaining": int(float(remaining)), "reset_ms": int(reset_ms),
                               "limit": int(float(cap))}
    ready = reply[4] if len(reply) > 4 else b""
    ready = ready.decode() if isinstance(ready, bytes) else ready
    return Decision(allowed=status == 0, reason=REJECT_REASONS.get(status), retry_after_ms=retry_ms,
                    tick=bool(tick), failed_bucket=buckets[failed - 1].name if failed else None,
                    buckets=states,
                    ready=frozenset(ready.split(",")) if ready else frozenset())


def peek(*, buckets: list[Bucket], redis) -> list[dict]:
    """The state of per-key buckets now, in one round trip, each in the shape of
    Decision.buckets' values (synchronous: for pages). A debt shows as 0 left."""
    argv = []
    for bucket in buckets:
        argv += [bucket.capacity, bucket.rate]
    levels = redis.eval(_PEEK, len(buckets), *[b.key for b in buckets], *argv)
    states = []
    for bucket, raw in zip(buckets, levels, strict=True):
        level = float(raw)
        refill_ms = math.ceil((bucket.capacity - level) * 1000 / max(bucket.rate, 0.001))
        states.append({"remaining": max(0, int(level)), "limit": int(bucket.capacity), "reset_ms": refill_ms})
    return states


def _adjust_args(buckets: list[Bucket], deltas: Sequence[float]) -> list:
    argv = []
    for bucket, delta in zip(buckets, deltas, strict=True):
        argv += [bucket.capacity, bucket.rate, delta]
    return argv


async def adjust(*, buckets: list[Bucket], deltas: Sequence[float], redis=None) -> None:
    """Correct token charges after the fact (positive delta = refund)."""
    await script(_ADJUST, redis)(keys=[b.key for b in buckets], args=_adjust_args(buckets, deltas))


async def settle(*, model: str, request_id: str, buckets: list[Bucket], deltas: Sequence[float],
                 record: str, stream: str, redis=None) -> None:
    """Release the request's in-flight slot, correct its token charge and
    append its usage record (unless ``record`` is empty), in one atomic round trip."""
    keys = [b.key for b in buckets] + [inflight_key(model), stream]
    await run_script(_SETTLE, keys, [*_adjust_args(buckets, deltas), request_id, record], redis)


def duration_text(ms: int) -> str:
    """OpenAI's reset format: '1s', '6m0s', '20ms'."""
    ms = max(0, int(ms))
    if ms < 1000:
        return f"{ms}ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:g}s" if seconds == int(seconds) else f"{seconds:.3f}".rstrip("0") + "s"
    minutes, rest = divmod(int(math.ceil(seconds)), 60)
    return f"{minutes}m{rest}s"


def ratelimit_headers(decision: Decision) -> dict[str, str]:
    headers = {}
    for name, suffix in (("requests", "requests"), ("tokens", "tokens")):
        state = decision.buckets.get(name)
        if state:
            headers[f"x-ratelimit-limit-{suffix}"] = str(state["limit"])
            headers[f"x-ratelimit-remaining-{suffix}"] = str(state["remaining"])
            headers[f"x-ratelimit-reset-{suffix}"] = duration_text(state["reset_ms"])
    return headers
