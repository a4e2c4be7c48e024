"""The control plane: signed config documents and canary rollouts
(inference_protocol.config, inference_client.control).

CONFIG_SIGNING_KEY: the Ed25519 private key (base64 of its 32 raw bytes) that
signs config documents. Set it on the control plane only (the process that runs
manage.py config_publish / deploy and the staff pages), never on gateways or
workers. CONFIG_PUBLIC_KEY: its public half, on every process; a node without it
applies no document and stays on document 0 (these variables). `manage.py
config_keygen` prints a fresh pair. The embedded default (PROMPTYARD_EMBEDDED, set
by scripts/run.sh; neither key set) derives a pair from its own SECRET_KEY, so that it
works with no set-up.
"""

from core.env import SettingError, env_bool, env_float, env_int, env_str
from inference_protocol.signing import check_public_key, dev_private_key, public_key_of

from .base import EMBEDDED, SECRET_KEY

CONFIG_SIGNING_KEY = env_str("CONFIG_SIGNING_KEY", "")
CONFIG_PUBLIC_KEY = env_str("CONFIG_PUBLIC_KEY", "")
if EMBEDDED and SECRET_KEY and not CONFIG_SIGNING_KEY and not CONFIG_PUBLIC_KEY:
    CONFIG_SIGNING_KEY = dev_private_key(SECRET_KEY)
_KEYGEN = "make a pair with `manage.py config_keygen`"
if CONFIG_SIGNING_KEY:
    try:
        _derived = public_key_of(CONFIG_SIGNING_KEY)
    except ValueError:
        raise SettingError(f"CONFIG_SIGNING_KEY is not an Ed25519 private key (base64 of 32 bytes): "
                           f"{_KEYGEN}") from None
    if CONFIG_PUBLIC_KEY and CONFIG_PUBLIC_KEY != _derived:
        raise SettingError("CONFIG_PUBLIC_KEY is not the public half of CONFIG_SIGNING_KEY: set both "
                           "from one `manage.py config_keygen`")
    CONFIG_PUBLIC_KEY = _derived
elif CONFIG_PUBLIC_KEY:
    try:
        check_public_key(CONFIG_PUBLIC_KEY)
    except ValueError:
        raise SettingError(f"CONFIG_PUBLIC_KEY is not an Ed25519 public key (base64 of 32 bytes): "
                           f"{_KEYGEN}") from None

# Redis key prefix of the documents (<ns>:latest, <ns>:published): one control
# plane per namespace (tests that publish use a namespace of their own).
CONFIG_NAMESPACE = env_str("CONFIG_NAMESPACE", "config")
# Fallback poll of the newest document (seconds), for a missed pub/sub message.
CONFIG_POLL_S = env_float("CONFIG_POLL_S", 1.0)
# Off: poll only (bench/config.py compares the two).
CONFIG_PUBSUB = env_bool("CONFIG_PUBSUB", True)
# The config floor (inference_protocol.config_floor): a file where this node keeps the
# newest document it applied, so that after a restart it never applies an older one
# (a replay into Redis). Set it on every gateway and worker, a path of its own that
# survives restarts; empty: the floor is kept in Redis (<ns>:floor) only, and on the
# control plane in its database of published documents too.
CONFIG_FLOOR_FILE = env_str("CONFIG_FLOOR_FILE", "")

# ---- canary rollout (document 0's "rollout" section; later documents carry their own)
# A step's window: the canary and the stable version are compared over this many
# seconds of requests after the step is applied.
ROLLOUT_WINDOW_S = env_float("ROLLOUT_WINDOW_S", 30.0)
# A window with fewer canary requests than this is extended (up to 3 windows),
# then judged on what it has.
ROLLOUT_MIN_REQUESTS = env_int("ROLLOUT_MIN_REQUESTS", 20)
# Roll back when the canary's error rate exceeds the stable one's by more than
# this (absolute: 0.05 = five percentage points)...
ROLLOUT_MAX_ERROR_RATE_DELTA = env_float("ROLLOUT_MAX_ERROR_RATE_DELTA", 0.05)
# ...or its p99 latency exceeds the stable one's by more than this factor.
ROLLOUT_MAX_P99_RATIO = env_float("ROLLOUT_MAX_P99_RATIO", 1.5)
# How long a rollout waits for a ready worker of the new version before it gives up.
ROLLOUT_READY_TIMEOUT_S = env_float("ROLLOUT_READY_TIMEOUT_S", 300.0)
# The lease of a rollout's driver (manage.py deploy, or the page's thread): the
# driver renews it every half second; once it has lapsed this long (the driver
# died or hangs), another driver may take the rollout over from its recorded
# step (deploy --resume, or the page's Resume), or abort it. Not in the document:
# only the control plane drives rollouts.
ROLLOUT_LEASE_S = env_float("ROLLOUT_LEASE_S", 10.0)
