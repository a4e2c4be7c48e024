"""Chat: limits, presence and delivery tunables (every one settable by env var).

Presence and the send-rate buckets live in Redis when REDIS_URL is set, and in
process memory otherwise (the embedded default: one process only).
"""

from core.env import env_float, env_int

# Largest message body, in bytes of UTF-8. Bigger sends get `message_too_large`.
CHAT_MAX_MESSAGE_BYTES = env_int("CHAT_MAX_MESSAGE_BYTES", 16 * 1024)

# Send rate per user: a token bucket holding CHAT_SEND_BURST tokens, refilled at
# CHAT_SEND_RATE tokens per second. One send costs one token; an empty bucket gives
# `rate_limited`. A retried send (same client_msg_id) costs nothing.
CHAT_SEND_RATE = env_float("CHAT_SEND_RATE", 5.0)
CHAT_SEND_BURST = env_int("CHAT_SEND_BURST", 30)

# Presence: a client heartbeats every CHAT_HEARTBEAT_SECONDS (the page does, and the
# server tells clients in its `welcome` frame); a connection with no heartbeat for
# CHAT_PRESENCE_TTL_SECONDS counts as gone. Keep the TTL at 2-3 heartbeats.
CHAT_HEARTBEAT_SECONDS = env_int("CHAT_HEARTBEAT_SECONDS", 10)
CHAT_PRESENCE_TTL_SECONDS = env_int("CHAT_PRESENCE_TTL_SECONDS", 30)
# How often each server process (chat/hub.py) re-reads its sockets' contacts' presence
# keys, so that a contact that vanished without closing shows offline at most this long
# after its TTL ran out; the same tick renews the sockets' group memberships, which the
# channel layer drops after CHANNEL_LAYER_GROUP_EXPIRY (config/settings/channels.py).
CHAT_PRESENCE_POLL_SECONDS = env_float("CHAT_PRESENCE_POLL_SECONDS", 5.0)
# A socket closes (4401) when its access ends (logout, password change, deactivation,
# API key revoked: accounts/socket_access.py), at once by a channel-layer event; each
# process also re-checks all its sockets' access this often (one batched read), in
# case an event was lost.
CHAT_ACCESS_RECHECK_SECONDS = env_float("CHAT_ACCESS_RECHECK_SECONDS", 30.0)
# last_seen_at is written to the database at most this often per user (and on disconnect).
CHAT_LAST_SEEN_RESOLUTION_SECONDS = env_int("CHAT_LAST_SEEN_RESOLUTION_SECONDS", 60)

# Catch-up after connect is read from the inbox in pages of this many entries.
CHAT_CATCHUP_BATCH = env_int("CHAT_CATCHUP_BATCH", 200)
# A `hello` names at most this many per-conversation cursors (refused beyond with
# `too_many_cursors`): far above a real user's conversations.
CHAT_HELLO_MAX_CURSORS = env_int("CHAT_HELLO_MAX_CURSORS", 1000)
# History API page size (and its maximum for ?limit=).
CHAT_HISTORY_PAGE = env_int("CHAT_HISTORY_PAGE", 50)
CHAT_HISTORY_MAX_PAGE = env_int("CHAT_HISTORY_MAX_PAGE", 200)
