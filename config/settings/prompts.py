"""Prompt library: bodies, version chains, uploads, validation limits.

Every value can be set by an environment variable of the same name.
"""

from core.env import env_float, env_int, env_str

from .storage import PRESIGN_PUT_EXPIRES

# Bodies at or under this many bytes are stored inline in the database row;
# larger ones go to the object store, content-addressed by SHA-256. The same
# limit decides whether GET version returns the body with the metadata.
PROMPT_INLINE_MAX_BYTES = env_int("PROMPT_INLINE_MAX_BYTES", 64 * 1024)

# Largest body a version may have (bytes, UTF-8); larger is a 400 on `body`.
PROMPT_BODY_MAX_BYTES = env_int("PROMPT_BODY_MAX_BYTES", 50 * 1024 * 1024)
# Largest request body creating a version: the body inline as JSON, where escaping
# (\n, \", \uXXXX for a 3-byte character) may double it, and the other fields.
# Larger: presign an upload (body_upload).
PROMPT_VERSION_REQUEST_MAX_BYTES = env_int("PROMPT_VERSION_REQUEST_MAX_BYTES",
                                           2 * PROMPT_BODY_MAX_BYTES + 1024 * 1024)

# Largest system text (bytes, UTF-8). System text is always stored inline.
PROMPT_SYSTEM_MAX_BYTES = env_int("PROMPT_SYSTEM_MAX_BYTES", 64 * 1024)

# A version's turns between the system text and the body (PromptVersion.messages):
# at most this many, each at most PROMPT_SYSTEM_MAX_BYTES, stored inline.
PROMPT_MAX_MESSAGES = env_int("PROMPT_MAX_MESSAGES", 100)

# A version's body is stored as a diff against its parent, except that at
# least every N-th version of a chain is a full snapshot, which bounds the
# work of rebuilding any version to N-1 diffs applied to one snapshot.
PROMPT_SNAPSHOT_EVERY = env_int("PROMPT_SNAPSHOT_EVERY", 32)

# A diff is kept only if its (compressed) size is below this fraction of the
# body; otherwise a full snapshot is cheaper to store and to read.
PROMPT_DELTA_MAX_RATIO = env_float("PROMPT_DELTA_MAX_RATIO", 0.5)
# Seconds creating a version may spend matching its body against its parent's;
# past it the version is stored as a full snapshot instead of a diff.
PROMPT_DELTA_TIMEOUT_S = env_float("PROMPT_DELTA_TIMEOUT_S", 0.5)

# Presigned upload URLs never live longer than 15 minutes, whatever
# PRESIGN_PUT_EXPIRES says.
PROMPT_UPLOAD_EXPIRES = min(PRESIGN_PUT_EXPIRES, 900)

# How long (seconds) an upload handle may be referenced by a new version
# after it was issued; the object itself is verified when it is referenced.
PROMPT_UPLOAD_HANDLE_MAX_AGE = env_int("PROMPT_UPLOAD_HANDLE_MAX_AGE", 24 * 3600)

# Rebuilt bodies are immutable (keyed by SHA-256), so a per-process cache of
# them is always correct; this bounds its total size in bytes.
PROMPT_BODY_CACHE_BYTES = env_int("PROMPT_BODY_CACHE_BYTES", 64 * 1024 * 1024)

# Lines of context around each hunk in the diff API.
PROMPT_DIFF_CONTEXT_LINES = env_int("PROMPT_DIFF_CONTEXT_LINES", 3)
# Seconds one diff or merge preview may spend matching (diff-match-patch's
# deadline). Past it the diff is still correct but coarser (larger changed
# blocks), and says so (X-Diff-Coarse: true and a last line; a preview's
# "coarse": true, its conflicts larger): no body pins a core for long.
PROMPT_DIFF_TIMEOUT_S = env_float("PROMPT_DIFF_TIMEOUT_S", 0.5)
# The field-aware diff (GET .../diff/fields, playground/version_diff.py): the most
# characters of message text diffs it carries in all (past it a message's diff is
# cut at a hunk and flagged `truncated`), and the most operations and characters of
# their values its JSON diffs (tools, response schema, tool calls) hold together.
PROMPT_DIFF_INLINE_MAX_CHARS = env_int("PROMPT_DIFF_INLINE_MAX_CHARS", 512 * 1024)
PROMPT_DIFF_JSON_MAX_OPS = env_int("PROMPT_DIFF_JSON_MAX_OPS", 500)
PROMPT_DIFF_JSON_MAX_CHARS = env_int("PROMPT_DIFF_JSON_MAX_CHARS", 128 * 1024)

# The server's public base URL (e.g. https://promptyard.example.com) written into
# exported code. Empty: taken from each export request (scheme + Host), which is
# right unless a proxy rewrites them.
PROMPT_EXPORT_BASE_URL = env_str("PROMPT_EXPORT_BASE_URL", "")

# A prompt history import (POST /api/prompts/import, playground/portability.py): the
# largest request body (bytes; by default what creating one version of the largest
# body may send) and the most versions and labels one file may hold. Larger: a 413 / a 400.
PROMPT_IMPORT_MAX_BYTES = env_int("PROMPT_IMPORT_MAX_BYTES", PROMPT_VERSION_REQUEST_MAX_BYTES)
PROMPT_IMPORT_MAX_VERSIONS = env_int("PROMPT_IMPORT_MAX_VERSIONS", 1000)
PROMPT_IMPORT_MAX_LABELS = env_int("PROMPT_IMPORT_MAX_LABELS", 1000)

# Run history (playground/runs.py): the most characters of a run's output stored
# with it; a longer output is kept cut to this many, flagged `output_truncated`.
PLAYGROUND_RUN_OUTPUT_MAX_CHARS = env_int("PLAYGROUND_RUN_OUTPUT_MAX_CHARS", 100_000)

# The scratch playground (/playground/): the most bytes of editor state kept per user.
PLAYGROUND_SCRATCH_MAX_BYTES = env_int("PLAYGROUND_SCRATCH_MAX_BYTES", 2 * 1024 * 1024)
