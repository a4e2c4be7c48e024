"""Sharing: limits on share-link token guessing.

Every value can be set by an environment variable of the same name.
"""

from core.env import env_int

# Failed share-token lookups (malformed, unknown, expired or revoked) allowed
# per client address per window; past that every token request from the
# address gets 429 with Retry-After until the window ends. Tokens carry 256
# random bits, so this is about stopping noise, not about the odds.
SHARE_TOKEN_MAX_FAILURES = env_int("SHARE_TOKEN_MAX_FAILURES", 30)
SHARE_TOKEN_FAILURE_WINDOW_S = env_int("SHARE_TOKEN_FAILURE_WINDOW_S", 300)

# Hard upper bound (seconds) on a presigned GET URL for a body, whatever
# PRESIGN_GET_EXPIRES says: such a URL keeps working after its holder's access
# is revoked, so this is the one stale window sharing allows (README).
PRESIGN_GET_MAX_EXPIRES = 60
