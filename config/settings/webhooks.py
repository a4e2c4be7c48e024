"""Webhooks: deliveries of prompt events to endpoints their owners register.

Every value can be set by an environment variable of the same name.
"""

from core.env import env_bool, env_float, env_int, env_str

# The Celery queue deliveries go to. Production runs a worker on it besides the
# GPU workers, and one beat process for the sweep below (docs/webhooks.md):
# `celery -A config worker -Q webhooks` and `celery -A config beat`.
# Without a broker (embedded default) deliveries run on threads of the serving process.
WEBHOOK_QUEUE = env_str("WEBHOOK_QUEUE", "webhooks")
# Deliveries a webhooks worker runs at once (its threads, unless -c says otherwise):
# each mostly waits on a receiver, up to WEBHOOK_ATTEMPT_TIMEOUT_S.
WEBHOOK_WORKER_THREADS = env_int("WEBHOOK_WORKER_THREADS", 8)
# Attempts per delivery (the first one included); after the last failed one the
# delivery is marked failed in the log, where the owner can redeliver it.
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 6)
# Retry n waits WEBHOOK_BACKOFF_BASE_S * 2**(n-1) seconds, at most WEBHOOK_BACKOFF_MAX_S
# (defaults: 10, 20, 40, 80, 160 s: the last attempt about 5 minutes after the first).
WEBHOOK_BACKOFF_BASE_S = env_float("WEBHOOK_BACKOFF_BASE_S", 10.0)
WEBHOOK_BACKOFF_MAX_S = env_float("WEBHOOK_BACKOFF_MAX_S", 3600.0)
# Seconds to connect and to wait for the receiver's answer, per attempt.
WEBHOOK_TIMEOUT_S = env_float("WEBHOOK_TIMEOUT_S", 10.0)
# Seconds one attempt may take in all (connect, TLS, send, answer): a receiver that
# trickles its answer a byte at a time is cut off here, not only by WEBHOOK_TIMEOUT_S per read.
WEBHOOK_ATTEMPT_TIMEOUT_S = env_float("WEBHOOK_ATTEMPT_TIMEOUT_S", 20.0)
# Bytes of the receiver's answer read at most (status line and headers; the body is
# never read): a longer answer ends the attempt as failed.
WEBHOOK_MAX_RESPONSE_BYTES = env_int("WEBHOOK_MAX_RESPONSE_BYTES", 64 * 1024)
# Endpoints are https only; plain http is for development (a local receiver).
WEBHOOK_ALLOW_HTTP = env_bool("WEBHOOK_ALLOW_HTTP", False)
# Server-side request forgery: endpoints that resolve to a loopback, link-local,
# private or otherwise non-global address are refused (at registration and at
# every attempt) unless the address is in one of these networks (comma-separated
# CIDRs, e.g. "10.20.0.0/16,127.0.0.1/32").
WEBHOOK_ALLOWED_NETWORKS = [n.strip() for n in env_str("WEBHOOK_ALLOWED_NETWORKS", "").split(",")
                            if n.strip()]
# Endpoints per owner.
WEBHOOK_MAX_ENDPOINTS = env_int("WEBHOOK_MAX_ENDPOINTS", 20)
# The sweep: every WEBHOOK_SWEEP_INTERVAL_S (a Celery beat entry on WEBHOOK_QUEUE;
# a thread of the serving process in the embedded default), pending deliveries
# whose next attempt is overdue by WEBHOOK_SWEEP_GRACE_S are queued again: their
# message was never queued (the broker was away) or was lost with the process
# holding it. The grace is how late a queued attempt may run before it counts as
# lost; a delivery that could not be queued at all is picked by the next sweep.
WEBHOOK_SWEEP_INTERVAL_S = env_float("WEBHOOK_SWEEP_INTERVAL_S", 30.0)
WEBHOOK_SWEEP_GRACE_S = env_float("WEBHOOK_SWEEP_GRACE_S", 60.0)
# Most deliveries one sweep queues (the oldest first; the next sweep takes the rest).
WEBHOOK_SWEEP_BATCH = env_int("WEBHOOK_SWEEP_BATCH", 500)
