"""Evaluations: datasets, runs, the label gate.

Every value can be set by an environment variable of the same name.
"""

from core.env import env_float, env_int, env_str

from .celery import CELERY_BROKER_URL
from .webhooks import WEBHOOK_QUEUE

# Largest dataset version (rows) and largest variable value / expected output (bytes).
EVAL_DATASET_MAX_ROWS = env_int("EVAL_DATASET_MAX_ROWS", 100_000)
EVAL_ROW_VALUE_MAX_BYTES = env_int("EVAL_ROW_VALUE_MAX_BYTES", 256 * 1024)
# Largest upload accepted by the import endpoint (bytes).
EVAL_IMPORT_MAX_BYTES = env_int("EVAL_IMPORT_MAX_BYTES", 64 * 1024 * 1024)
# Largest request body of a dataset import or new dataset version: the file
# (multipart), or its rows as JSON, where escaping (\n, \") may double the text.
EVAL_DATASET_REQUEST_MAX_BYTES = env_int("EVAL_DATASET_REQUEST_MAX_BYTES",
                                         2 * EVAL_IMPORT_MAX_BYTES + 1024 * 1024)
# Uploads larger than this import in the background (202 and a status URL with
# progress); smaller ones in the request.
EVAL_IMPORT_BACKGROUND_BYTES = env_int("EVAL_IMPORT_BACKGROUND_BYTES", 2 * 1024 * 1024)
# Most columns (prompt version x model x parameters) in one run.
EVAL_RUN_MAX_COLUMNS = env_int("EVAL_RUN_MAX_COLUMNS", 10)
# Most times a run may send each row through each column (`repeats`).
EVAL_RUN_MAX_REPEATS = env_int("EVAL_RUN_MAX_REPEATS", 10)

# How a run (and a background import) is driven: "thread": a thread of the
# process that created (or resumed) it, the default of the embedded default (no
# broker); "none": only `manage.py eval_worker` processes drive them, the default
# with services (a server never holds a driver, nor starts one on a read).
EVAL_DISPATCH = env_str("EVAL_DISPATCH", "none" if CELERY_BROKER_URL else "thread")
# The most runs one user may have queued or running at once, and the most
# background imports (queued or parsing or writing): a create past it is a 429
# too_many_active_jobs.
EVAL_MAX_ACTIVE_RUNS = env_int("EVAL_MAX_ACTIVE_RUNS", 5)
EVAL_MAX_ACTIVE_IMPORTS = env_int("EVAL_MAX_ACTIVE_IMPORTS", 3)
# Generations one run keeps in flight at once (its share of the batch lane;
# the scheduler gives batch priority only the slots interactive traffic leaves).
EVAL_RUN_WINDOW = env_int("EVAL_RUN_WINDOW", 64)
# What runs a window of cells: the gateway's batch lane (the /v1 path at batch
# priority: checker, prompt cache, admission against the owner's tier, usage
# records). Named here because the gateway sits above the evaluations app.
EVAL_LANE = "inference_client.batch_lane.BatchLane"
# The driver renews its lease on a run this often; a run whose lease ran out
# (a crashed driver) is picked up by the next eval_worker poll (or, in the
# embedded default, by the next read of the run).
EVAL_LEASE_S = env_float("EVAL_LEASE_S", 30.0)
# How long one cell may wait for its generation (batch work waits behind
# interactive traffic), and how long a run waits for a worker of its model
# before the cells of that window fail with model_unavailable.
EVAL_CELL_TIMEOUT_S = env_float("EVAL_CELL_TIMEOUT_S", 600.0)
EVAL_NO_WORKER_WAIT_S = env_float("EVAL_NO_WORKER_WAIT_S", 60.0)
# Modules imported before evaluators are looked up (custom evaluators register there).
EVAL_EVALUATOR_MODULES = [m for m in env_str("EVAL_EVALUATOR_MODULES", "").split(",") if m]
# Seconds the word diffs of one page of eval results may spend matching, and
# one `similarity` score: past it a diff is one whole change and a similarity a
# lower bound (playground.matching), so no output pins a core for long.
EVAL_DIFF_TIMEOUT_S = env_float("EVAL_DIFF_TIMEOUT_S", 0.5)
EVAL_SIMILARITY_TIMEOUT_S = env_float("EVAL_SIMILARITY_TIMEOUT_S", 0.5)
# Bootstrap resamples for the 95% confidence intervals of column means.
EVAL_BOOTSTRAP_RESAMPLES = env_int("EVAL_BOOTSTRAP_RESAMPLES", 1000)

# User-supplied regular expressions (the regex evaluator's pattern; pattern and
# patternProperties in the JSON schemas the server validates against) run on RE2
# (core.patterns), in time linear in the text. Longest pattern accepted
# (characters), and the memory RE2 may use for one compiled pattern (bytes;
# a pattern that needs more is refused).
USER_PATTERN_MAX_CHARS = env_int("USER_PATTERN_MAX_CHARS", 1000)
USER_PATTERN_MAX_MEM = env_int("USER_PATTERN_MAX_MEM", 8 * 1024 * 1024)

# Online evaluation (evals/online.py): the most rules one prompt may have, the
# Celery queue its scoring tasks go to (by default the webhooks workers', which
# also run the generations sweep; with no broker a thread of the process that
# stores the generations scores them), and the most generations in one task.
ONLINE_EVAL_MAX_RULES = env_int("ONLINE_EVAL_MAX_RULES", 10)
ONLINE_EVAL_QUEUE = env_str("ONLINE_EVAL_QUEUE", WEBHOOK_QUEUE)
ONLINE_EVAL_BATCH = env_int("ONLINE_EVAL_BATCH", 50)
# After a failed publish (the broker away), sampled generations are counted as
# lost without trying again for this many seconds: the writer never waits on it.
ONLINE_EVAL_BROKER_BACKOFF_S = env_float("ONLINE_EVAL_BROKER_BACKOFF_S", 30.0)
