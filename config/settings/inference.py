"""Inference: which models exist and which engine serves each.

INFERENCE_MODELS: JSON object, model name -> engine spec, e.g.
  {"smollm2": {"engine": "llamacpp"},
   "all-minilm-l6-v2": {"engine": "llamacpp_embeddings"},
   "fixed-cost": {"engine": "fixed_cost", "max_inputs": 50, "call_s": 0.2}}
"""

from core.env import env_float, env_int, env_json, env_str

from .celery import CELERY_BROKER_URL

INFERENCE_MODELS = env_json("INFERENCE_MODELS", {
    "smollm2": {"engine": "llamacpp"},
    # Sentence embeddings on llama.cpp (no torch): /v1/embeddings, the semantic cache.
    "all-minilm-l6-v2": {"engine": "llamacpp_embeddings"},
    "fixed-cost": {"engine": "fixed_cost", "max_inputs": 50, "call_s": 0.2},
})
DEFAULT_MODEL = env_str("DEFAULT_MODEL", "smollm2")
# What a model's tokens cost, in USD per million: {"model": {"input": 0.05, "output": 0.2}}
# (inference_protocol.pricing). A model left out is unpriced: pages show no cost for it.
# The bundled models are priced as a small self-hosted model on one GPU: set your own.
INFERENCE_PRICES = env_json("INFERENCE_PRICES", {
    "smollm2": {"input": 0.02, "output": 0.06},
    "fixed-cost": {"input": 0.10, "output": 0.40},
})

# Bounds of the sampling parameters, the same everywhere a generation is asked
# for: /v1, saving a prompt version, and every engine (inference_protocol.validation).
INFERENCE_TEMPERATURE_MAX = env_float("INFERENCE_TEMPERATURE_MAX", 2.0)
INFERENCE_MAX_TOKENS_LIMIT = env_int("INFERENCE_MAX_TOKENS_LIMIT", 32768)
INFERENCE_MAX_STOP_SEQUENCES = env_int("INFERENCE_MAX_STOP_SEQUENCES", 4)
# The most choices one request may ask for (`n`): each is a sequence of its own on the device.
INFERENCE_MAX_N = env_int("INFERENCE_MAX_N", 8)
# The most alternatives per token `top_logprobs` may ask for (OpenAI's limit: 20).
INFERENCE_MAX_TOP_LOGPROBS = env_int("INFERENCE_MAX_TOP_LOGPROBS", 20)
# The most strings one /v1/embeddings request may hold (OpenAI's limit: 2048).
INFERENCE_MAX_EMBEDDING_INPUTS = env_int("INFERENCE_MAX_EMBEDDING_INPUTS", 2048)

# The Batch API (/v1/files, /v1/batches; inference_client/batches.py).
BATCH_MAX_LINES = env_int("BATCH_MAX_LINES", 50_000)
BATCH_MAX_FILE_BYTES = env_int("BATCH_MAX_FILE_BYTES", 200 * 1024 * 1024)
# Largest /v1/files request body: the file plus its multipart framing and fields.
BATCH_REQUEST_MAX_BYTES = env_int("BATCH_REQUEST_MAX_BYTES", BATCH_MAX_FILE_BYTES + 1024 * 1024)
# Lines of one batch a driver stores per step (and queues behind the lines started:
# at most two device calls' worth per live worker, inference_client.batch_job).
BATCH_WINDOW = env_int("BATCH_WINDOW", 64)
# A driver holds a batch by a lease it renews after every step; a crashed one's
# batch is resumed by the next driver once the lease runs out.
BATCH_LEASE_S = env_float("BATCH_LEASE_S", 30.0)
# "thread": a driver thread starts in the process that created the batch, the
# default of the embedded default (no broker); "none": only `manage.py
# batch_worker` processes drive batches, the default with services.
BATCH_DISPATCH = env_str("BATCH_DISPATCH", "none" if CELERY_BROKER_URL else "thread")
# The most unfinished batches (validating, in progress, cancelling) one account
# may have at once: a create past it is a 429 too_many_active_jobs.
BATCH_MAX_ACTIVE = env_int("BATCH_MAX_ACTIVE", 10)
BATCH_LINE_TIMEOUT_S = env_float("BATCH_LINE_TIMEOUT_S", 600.0)
# manage.py batch_worker's CPU niceness (0: none): on a host it shares with serve and GPU
# workers, its drivers take only the CPU the interactive path leaves, as its lines take
# only the device slots interactive requests leave.
BATCH_WORKER_NICE = env_int("BATCH_WORKER_NICE", 10)
# The most tokens (prompt + max_tokens, estimated at upload) an account may have
# enqueued in unfinished batches, by tier; checked when a batch is created.
BATCH_ENQUEUED_TOKENS = {"free": env_int("BATCH_ENQUEUED_TOKENS_FREE", 2_000_000),
                         "paid": env_int("BATCH_ENQUEUED_TOKENS_PAID", 100_000_000)}

# Usage records (inference_client/usage.py): a gateway's writer stores the records
# it read once a full batch waits or the first was read this long ago, so that
# at low load a write covers many requests, not one each.
USAGE_FLUSH_INTERVAL_MS = env_int("USAGE_FLUSH_INTERVAL_MS", 1000)
