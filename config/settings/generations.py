"""The generations log (generations/): what each run of a saved prompt version
asked and answered. Every value can be set by an environment variable of the same name."""

from core.env import env_bool, env_float, env_int, env_str

# Off: no generation is logged (usage records are kept all the same).
GENERATIONS_ENABLED = env_bool("GENERATIONS_ENABLED", True)
# The share of runs logged (0..1), picked at random per request.
GENERATIONS_SAMPLE_RATE = env_float("GENERATIONS_SAMPLE_RATE", 1.0)
# While a gateway's usage writer is behind (its last read was a full batch), only
# this share of the runs it would log is logged; the rest are counted
# (promptyard_generations_dropped_total{reason="backlog"}). Requests never wait.
GENERATIONS_BACKLOG_SAMPLE_RATE = env_float("GENERATIONS_BACKLOG_SAMPLE_RATE", 0.1)
# Generations older than this many days are deleted by `manage.py generations_sweep`.
GENERATIONS_RETENTION_DAYS = env_int("GENERATIONS_RETENTION_DAYS", 30)
# Outputs and rendered messages over this many characters go to the object store;
# the row keeps the first GENERATIONS_PREVIEW_CHARS of an output (lists show that head).
GENERATIONS_INLINE_MAX_CHARS = env_int("GENERATIONS_INLINE_MAX_CHARS", 64 * 1024)
GENERATIONS_PREVIEW_CHARS = env_int("GENERATIONS_PREVIEW_CHARS", 2000)
# Largest output logged (characters); past it the output is cut (in the usage stream too).
GENERATIONS_OUTPUT_MAX_CHARS = env_int("GENERATIONS_OUTPUT_MAX_CHARS", 16 * 1024 * 1024)
# A dotted path to fn(generation: dict) -> dict run on each generation before it is
# stored (PII redaction: docs/generations.md); "" for none.
GENERATIONS_REDACT = env_str("GENERATIONS_REDACT", "")

# The regression alarm (generations/regression.py, docs/generations.md): after a
# label moves, its new version's generations since the move are compared with the
# previous version's over as long before it, for REGRESSION_WINDOW_S after the move.
REGRESSION_WINDOW_S = env_int("REGRESSION_WINDOW_S", 6 * 3600)
# How often the check runs (the beat entry, or a thread of the embedded default).
REGRESSION_CHECK_INTERVAL_S = env_int("REGRESSION_CHECK_INTERVAL_S", 300)
# Nothing fires on fewer generations than this on either side (scores: samples).
REGRESSION_MIN_SAMPLES = env_int("REGRESSION_MIN_SAMPLES", 50)
# One-sided significance level of every check.
REGRESSION_ALPHA = env_float("REGRESSION_ALPHA", 0.01)
# A latency or TTFT check fires only on a rise of at least this share of the
# previous version's figure (0.2: +20%); a score check on a drop of this share.
REGRESSION_MIN_RISE = env_float("REGRESSION_MIN_RISE", 0.2)
REGRESSION_MIN_SCORE_DROP = env_float("REGRESSION_MIN_SCORE_DROP", 0.05)
