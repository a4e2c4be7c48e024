"""The local store's stand-in for presigned URLs (embedded default, no S3):
a signed, expiring token in the URL authorises one PUT of exactly the
declared size, or GETs of one object."""

import time

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from core.blobstore import BlobStore, LocalBlobStore, get_blob_store
from core.errors import json_error


@csrf_exempt
def blob_local(request: HttpRequest, token: str) -> HttpResponseBase:
    store = get_blob_store()
    if not isinstance(store, LocalBlobStore):
        return json_error("not_found", "The local blob endpoint is off: an object store is configured.")
    method = request.method
    # The grant's own signed deadline, within the longest lifetime of its kind.
    max_age = settings.PROMPT_UPLOAD_EXPIRES if method == "PUT" else settings.PRESIGN_GET_MAX_EXPIRES
    try:
        grant = store.unsign(token, max_age=max_age)
    except signing.SignatureExpired:
        return json_error("url_expired")
    except signing.BadSignature:
        return json_error("url_invalid")
    if not isinstance(grant.get("d"), int) or time.time() > grant["d"]:
        return json_error("url_expired")
    if grant["m"] != method:
        return json_error("method_not_allowed", f"This URL allows {grant['m']} only.")
    if method == "PUT":
        return _put(request, store, grant["k"], grant["s"])
    if store.size(grant["k"]) is None:
        return json_error("not_found", "No such object.")
    # A presigned URL is a short-lived capability: no cache keeps what it served.
    return StreamingHttpResponse(store.iter_chunks(grant["k"]), content_type="application/octet-stream",
                                 headers={"Cache-Control": "no-store"})


class _WrongSize(Exception):
    pass


def _put(request: HttpRequest, store: BlobStore, key: str, size: int) -> HttpResponseBase:
    declared = request.headers.get("Content-Length")
    if declared is not None and declared != str(size):
        return json_error("size_mismatch", f"This URL accepts exactly {size} bytes.")
    # Read the stream, not request.body: it is bounded by the signed size, not by
    # DATA_UPLOAD_MAX_MEMORY_SIZE; written as it comes, one read in memory at a time,
    # and a body of another size leaves nothing stored.
    try:
        with store.writer(key) as writer:
            while writer.bytes <= size and (chunk := request.read(min(1 << 20, size + 1 - writer.bytes))):
                writer.write(chunk)
            if writer.bytes != size:
                raise _WrongSize
    except _WrongSize:
        return json_error("size_mismatch", f"This URL accepts exactly {size} bytes.")
    return HttpResponse(status=200)
