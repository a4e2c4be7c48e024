"""Object store for large prompt bodies.

S3_ENDPOINT_URL / S3_BUCKET / S3_ACCESS_KEY_ID / S3_SECRET_ACCESS_KEY /
S3_REGION: any S3-protocol server. Unset S3_BUCKET: a local directory with the
same interface (embedded default).
"""

from core.env import env_int, env_str

from .base import VAR_DIR

S3_ENDPOINT_URL = env_str("S3_ENDPOINT_URL") or None
S3_BUCKET = env_str("S3_BUCKET")
S3_ACCESS_KEY_ID = env_str("S3_ACCESS_KEY_ID")
S3_SECRET_ACCESS_KEY = env_str("S3_SECRET_ACCESS_KEY")
S3_REGION = env_str("S3_REGION", "us-east-1")
LOCAL_BLOB_DIR = VAR_DIR / "blobs"

# Large files (model checkpoints) go up with boto3's managed transfer: multipart
# above S3_MULTIPART_THRESHOLD bytes, in parts of S3_MULTIPART_CHUNKSIZE bytes, at
# most S3_MULTIPART_CONCURRENCY parts in flight (memory held: about chunk size x
# concurrency). S3 needs parts of at least 5 MiB, except the last.
S3_MULTIPART_THRESHOLD = env_int("S3_MULTIPART_THRESHOLD", 64 * 1024 * 1024)
S3_MULTIPART_CHUNKSIZE = env_int("S3_MULTIPART_CHUNKSIZE", 64 * 1024 * 1024)
S3_MULTIPART_CONCURRENCY = env_int("S3_MULTIPART_CONCURRENCY", 4)
# Files written as they are produced (a batch's output) go up in parts of this
# size (S3's least, 5 MiB, by default): the memory a writer holds, whatever the
# file's size (at most 10,000 parts: 50 GB).
S3_STREAM_PART_BYTES = env_int("S3_STREAM_PART_BYTES", 5 * 1024 * 1024)

# Presigned URL lifetimes (seconds). GET is short: it is the only window in
# which a revoked user can still read a body they were handed.
PRESIGN_PUT_EXPIRES = env_int("PRESIGN_PUT_EXPIRES", 900)
PRESIGN_GET_EXPIRES = env_int("PRESIGN_GET_EXPIRES", 60)
