"""Inference gateway: admission control, capacity controller, idempotency, prompt
cache. Every tunable is settable by an environment variable of the same name.

Buckets and controller state live in Redis (atomic Lua scripts). Without
REDIS_URL (the embedded default, one local user) admission, idempotency and the
prompt cache are off and /v1 simply forwards to the in-process worker.
"""

from core.env import env_bool, env_float, env_int, env_json, env_str

# ---- per API key, by tier ---------------------------------------------------
# Token buckets per key: the limit is per minute; a bucket holds one minute's
# worth (so a quiet key may burst up to its minute limit) and refills smoothly.
# A request costs 1 request and (estimated prompt tokens + max_tokens) tokens;
# the token charge is corrected with the exact usage when the generation ends.
RATE_LIMITS = {
    "free": {
        "requests_per_min": env_int("RATE_LIMIT_FREE_RPM", 60),
        "tokens_per_min": env_int("RATE_LIMIT_FREE_TPM", 40_000),
    },
    "paid": {
        "requests_per_min": env_int("RATE_LIMIT_PAID_RPM", 3_000),
        "tokens_per_min": env_int("RATE_LIMIT_PAID_TPM", 2_000_000),
    },
}
# Batch-lane requests (evaluation cells) take the owner's buckets above too, but
# never their last share BATCH_INTERACTIVE_RESERVE (0..1): an evaluation running
# on an account leaves it that much of each minute for its interactive calls.
BATCH_INTERACTIVE_RESERVE = env_float("BATCH_INTERACTIVE_RESERVE", 0.5)
# Prompt-token estimate before the engine tokenizes: characters per token, plus
# a per-message overhead (role markers). Deliberately a little pessimistic.
RATE_LIMIT_CHARS_PER_TOKEN = env_float("RATE_LIMIT_CHARS_PER_TOKEN", 3.0)
RATE_LIMIT_TOKENS_PER_MESSAGE = env_int("RATE_LIMIT_TOKENS_PER_MESSAGE", 4)

# ---- global bucket per model, set by the capacity controller -----------------
# The controller runs at most once per period, triggered lazily by requests.
CAPACITY_CONTROLLER_PERIOD_S = env_float("CAPACITY_CONTROLLER_PERIOD_S", 1.0)
# Capacity of one worker, tokens/s. A worker busier than CAPACITY_MIN_BUSY_FRACTION
# is also measured as tokens_per_s / busy_fraction (its throughput if the device
# were always busy), and the higher of the two counts.
CAPACITY_NOMINAL_TOKENS_PER_S = env_float("CAPACITY_NOMINAL_TOKENS_PER_S", 20_000)
CAPACITY_MIN_BUSY_FRACTION = env_float("CAPACITY_MIN_BUSY_FRACTION", 0.2)
# The global bucket holds this many seconds of the global rate (burst tolerance).
CAPACITY_BUCKET_S = env_float("CAPACITY_BUCKET_S", 10.0)
# Global rate = measured capacity x headroom of the zone. Above 1 in green
# because costs charge max_tokens up front, which most requests do not use.
CAPACITY_HEADROOM = env_json("CAPACITY_HEADROOM", {"green": 1.5, "yellow": 1.0, "red": 0.9})
# Share of the global bucket free traffic may use, per zone (0: free is rejected).
CAPACITY_FREE_SHARE = env_json("CAPACITY_FREE_SHARE", {"green": 1.0, "yellow": 0.3, "red": 0.0})
# Part of the global bucket free traffic may never use, even in green: paid
# requests always find this much left.
CAPACITY_PAID_RESERVE = env_float("CAPACITY_PAID_RESERVE", 0.2)
# Zones. Capacity ratio = capacity now / reference capacity (the recent peak,
# forgotten by CAPACITY_REFERENCE_DECAY per period so a permanent scale-down
# becomes the new normal). Queue = waiting requests / live batch slots.
CAPACITY_YELLOW_RATIO = env_float("CAPACITY_YELLOW_RATIO", 0.75)
CAPACITY_RED_RATIO = env_float("CAPACITY_RED_RATIO", 0.4)
CAPACITY_YELLOW_QUEUE = env_float("CAPACITY_YELLOW_QUEUE", 2.0)
CAPACITY_RED_QUEUE = env_float("CAPACITY_RED_QUEUE", 6.0)
CAPACITY_REFERENCE_DECAY = env_float("CAPACITY_REFERENCE_DECAY", 0.01)
# Hysteresis: a zone is left for a better one only after this many consecutive
# periods clearly inside it (ratio above threshold + margin, queue below half
# the threshold), and one zone at a time.
CAPACITY_CALM_PERIODS = env_int("CAPACITY_CALM_PERIODS", 3)
CAPACITY_RATIO_MARGIN = env_float("CAPACITY_RATIO_MARGIN", 0.1)
# Gradual recovery: per period the rate and the free share rise by at most this
# fraction of their target; tightening is immediate.
CAPACITY_RECOVERY_STEP = env_float("CAPACITY_RECOVERY_STEP", 0.2)

# ---- queue-depth backpressure ------------------------------------------------
# Requests in flight for a model beyond its live batch slots count as queued;
# past this bound new requests get 429 instead of waiting.
INFERENCE_MAX_QUEUE_PER_MODEL = env_int("INFERENCE_MAX_QUEUE_PER_MODEL", 500)
# Retry-After for a 503 when no worker for the model is alive: about the time a
# worker takes to start and publish its first heartbeat.
INFERENCE_NO_WORKER_RETRY_AFTER_S = env_int("INFERENCE_NO_WORKER_RETRY_AFTER_S", 5)

# ---- requests ----------------------------------------------------------------
# Largest /v1 request body (bytes); a bigger one is a 400 naming `messages`.
INFERENCE_MAX_BODY_BYTES = env_int("INFERENCE_MAX_BODY_BYTES", 1024 * 1024)
INFERENCE_DEFAULT_MAX_TOKENS = env_int("INFERENCE_DEFAULT_MAX_TOKENS", 256)
# How long a request may wait for its generation (queue + run), seconds.
INFERENCE_REQUEST_TIMEOUT_S = env_float("INFERENCE_REQUEST_TIMEOUT_S", 120.0)

# ---- idempotency ---------------------------------------------------------------
IDEMPOTENCY_TTL_S = env_int("IDEMPOTENCY_TTL_S", 24 * 3600)

# ---- prompt cache ------------------------------------------------------------
# Exact cache for temperature-0 requests, per tenant, in Redis with this TTL.
PROMPT_CACHE_ENABLED = env_bool("PROMPT_CACHE_ENABLED", True)
PROMPT_CACHE_TTL_S = env_int("PROMPT_CACHE_TTL_S", 3600)
# Semantic cache (opt-in per key or request, temperature 0 only): cosine
# similarity of embeddings of the last user message, other messages identical.
# Threshold per model ("default" for the rest), tuned for all-MiniLM-L6-v2.
SEMANTIC_CACHE_THRESHOLD = env_json("SEMANTIC_CACHE_THRESHOLD", {"default": 0.95})
# The catalog's embedding model that embeds them (a worker must serve it), and how
# long a lookup waits for its vector before it answers without the cache.
SEMANTIC_CACHE_EMBEDDING_MODEL = env_str("SEMANTIC_CACHE_EMBEDDING_MODEL", "all-minilm-l6-v2")
SEMANTIC_CACHE_EMBED_TIMEOUT_S = env_float("SEMANTIC_CACHE_EMBED_TIMEOUT_S", 10.0)
# Entries kept per tenant/model/context scope (searched by brute force).
SEMANTIC_CACHE_MAX_ENTRIES = env_int("SEMANTIC_CACHE_MAX_ENTRIES", 200)
# Polarity guard: the two questions must share at least this fraction of
# content words (Jaccard), the same negations and the same numbers.
SEMANTIC_CACHE_MIN_OVERLAP = env_float("SEMANTIC_CACHE_MIN_OVERLAP", 0.6)
