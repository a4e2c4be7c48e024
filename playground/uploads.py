"""Direct client uploads of large bodies to the object store.

1. `upload_presign` hands out a presigned PUT for a fresh staging key
   (``uploads/<uuid>``) of exactly the declared size, expiring within 15
   minutes, plus a signed handle naming that key.
2. The client PUTs the bytes straight to the store.
3. `upload_verify` (called when a version references the handle) copies the
   staging object to a key only the server writes, then checks its size,
   SHA-256 and UTF-8 there, so a client re-using its PUT URL afterwards cannot
   change what was verified. Only then is it copied to ``sha256/<hex>``.
"""

from __future__ import annotations

import codecs
import hashlib
import re
import uuid

from django.conf import settings
from django.core import signing

from core.blobstore import BlobNotFound, get_blob_store
from core.error_codes import DomainError

from .models import Blob

_SALT = "playground.upload"
# The only keys upload_verify reads or deletes: the staging keys upload_presign
# issues. Never a content-addressed object (sha256/...), whatever a handle says.
UPLOAD_PREFIX = "uploads/"
_STAGING_KEY = re.compile(r"uploads/[0-9a-f]{32}")


def upload_presign(*, user, prompt, size: int) -> dict:
    if size < 1 or size > settings.PROMPT_BODY_MAX_BYTES:
        raise DomainError(f"size must be between 1 and {settings.PROMPT_BODY_MAX_BYTES} bytes.",
                          code="body_too_large" if size > 0 else "invalid_size", field="size")
    key = f"{UPLOAD_PREFIX}{uuid.uuid4().hex}"
    expires = settings.PROMPT_UPLOAD_EXPIRES
    target = get_blob_store().presign_put(key, size=size, expires=expires)
    handle = signing.dumps({"k": key, "s": size, "u": user.pk, "p": str(prompt.pk)}, salt=_SALT)
    return {"upload": handle, "url": target["url"], "method": target["method"],
            "headers": target["headers"], "size": size, "expires_in": expires}


def _check_handle(handle: str, *, user, prompt) -> dict:
    try:
        data = signing.loads(handle, salt=_SALT, max_age=settings.PROMPT_UPLOAD_HANDLE_MAX_AGE)
    except signing.BadSignature as exc:
        raise DomainError("The upload handle is invalid or expired.", code="upload_invalid",
                          field="body_upload.upload") from exc
    if not isinstance(data, dict) or not isinstance(data.get("k"), str) \
            or not _STAGING_KEY.fullmatch(data["k"]) or not isinstance(data.get("s"), int):
        raise DomainError("The upload handle is invalid or expired.", code="upload_invalid",
                          field="body_upload.upload")
    if data.get("u") != user.pk or data.get("p") != str(prompt.pk):
        raise DomainError("The upload handle belongs to another prompt or user.", code="upload_invalid",
                          field="body_upload.upload")
    return data


def _scan(store, key: str) -> tuple[int, str, bool]:
    """Size, SHA-256 and UTF-8 validity of a stored object, in one streaming pass."""
    digest = hashlib.sha256()
    decoder = codecs.getincrementaldecoder("utf-8")()
    size, utf8 = 0, True
    for chunk in store.iter_chunks(key):
        digest.update(chunk)
        size += len(chunk)
        if utf8:
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError:
                utf8 = False
    if utf8:
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            utf8 = False
    return size, digest.hexdigest(), utf8


def upload_verify(*, user, prompt, handle: str, sha256: str) -> Blob:
    """The verified Blob for an upload, or a 400 (nothing is recorded)."""
    data = _check_handle(handle, user=user, prompt=prompt)
    sha256 = (sha256 or "").lower()
    existing = Blob.objects.filter(sha256=sha256).first()
    store = get_blob_store()
    staging = data["k"]
    # Even when these bytes are already stored, the upload itself is required:
    # knowing a hash must never grant access to someone else's body.
    if store.size(staging) is None:
        raise DomainError("Nothing was uploaded for this handle.", code="upload_missing",
                          field="body_upload")
    private = f"verify/{uuid.uuid4().hex}"
    try:
        store.copy(staging, private)
        size, actual, utf8 = _scan(store, private)
        if size != data["s"]:
            raise DomainError(f"The uploaded object has {size} bytes, {data['s']} were declared.",
                              code="upload_size_mismatch", field="body_upload")
        if actual != sha256:
            raise DomainError("The uploaded object's SHA-256 does not match body_upload.sha256.",
                              code="upload_hash_mismatch", field="body_upload.sha256")
        if not utf8:
            raise DomainError("The body is not valid UTF-8.", code="body_not_utf8", field="body")
        if existing is None:
            store.copy(private, f"sha256/{actual}")
            existing, _ = Blob.objects.get_or_create(sha256=actual, defaults={"size": size})
        return existing
    except BlobNotFound as exc:
        raise DomainError("Nothing was uploaded for this handle.", code="upload_missing",
                          field="body_upload") from exc
    finally:
        store.delete(private)
        store.delete(staging)
