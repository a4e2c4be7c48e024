import hashlib
import os
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from core.blobstore import get_blob_store
from playground.models import Blob, PromptVersion
from tests.playground.conftest import create_version

pytestmark = [pytest.mark.django_db, pytest.mark.needs_services]  # presigned uploads to the S3 server


def _presign(client, prompt, size):
    response = client.post(f"/api/prompts/{prompt.pk}/uploads", {"size": size}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def _text(size: int) -> bytes:
    # Printable ASCII with newlines: valid UTF-8 of exactly `size` bytes.
    chunk = os.urandom(size // 2).hex().encode()
    data = bytearray(chunk[:size])
    data[99::100] = b"\n" * len(data[99::100])
    return bytes(data)


def test_should_upload_20mb_body_by_presigned_url_and_read_it_back(auth_client, prompt):
    data = _text(20 * 1024 * 1024)
    sha = hashlib.sha256(data).hexdigest()
    target = _presign(auth_client, prompt, len(data))
    expires = int(parse_qs(urlparse(target["url"]).query)["X-Amz-Expires"][0])
    assert 0 < expires <= 900 and target["expires_in"] == expires
    put = httpx.put(target["url"], content=data, headers=target["headers"], timeout=60)
    assert put.status_code == 200, put.text
    response = create_version(auth_client, prompt, body_upload={"upload": target["upload"], "sha256": sha})
    assert response.status_code == 201, response.json()
    version = response.json()
    assert version["body_size"] == len(data) and version["body_sha256"] == sha and version["body"] is None
    body_url = f"/api/prompts/{prompt.pk}/versions/{version['id']}/body"
    assert b"".join(auth_client.get(body_url).streaming_content) == data
    tail = auth_client.get(body_url, HTTP_RANGE="bytes=-100")
    assert tail.status_code == 206 and tail.content == data[-100:]
    signed = auth_client.get(body_url + "?presign=1").json()["url"]
    assert hashlib.sha256(httpx.get(signed, timeout=60).content).hexdigest() == sha
    assert get_blob_store().size(f"sha256/{sha}") == len(data)


def test_forged_hash_is_rejected_and_nothing_is_recorded(auth_client, prompt):
    data = _text(5000)
    target = _presign(auth_client, prompt, len(data))
    httpx.put(target["url"], content=data, headers=target["headers"]).raise_for_status()
    forged = hashlib.sha256(b"something else").hexdigest()
    before = (PromptVersion.objects.count(), Blob.objects.count())
    response = create_version(auth_client, prompt, body_upload={"upload": target["upload"], "sha256": forged})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "upload_hash_mismatch"
    assert response.json()["error"]["field"] == "body_upload.sha256"
    assert (PromptVersion.objects.count(), Blob.objects.count()) == before
    assert get_blob_store().size(f"sha256/{forged}") is None


def test_missing_upload_and_wrong_size_are_400(auth_client, prompt):
    target = _presign(auth_client, prompt, 100)
    sha = hashlib.sha256(b"x" * 100).hexdigest()
    missing = create_version(auth_client, prompt, body_upload={"upload": target["upload"], "sha256": sha})
    assert missing.status_code == 400 and missing.json()["error"]["code"] == "upload_missing"
    short = httpx.put(target["url"], content=b"x" * 99, headers={"Content-Length": "99"})
    assert short.status_code >= 400  # the signature covers the declared size
    assert PromptVersion.objects.count() == 0


def test_non_utf8_upload_is_rejected(auth_client, prompt):
    data = b"caf\xe9 latin-1 " * 10
    target = _presign(auth_client, prompt, len(data))
    httpx.put(target["url"], content=data, headers=target["headers"]).raise_for_status()
    response = create_version(auth_client, prompt, body_upload={
        "upload": target["upload"], "sha256": hashlib.sha256(data).hexdigest()})
    assert response.status_code == 400 and response.json()["error"]["field"] == "body"
    assert PromptVersion.objects.count() == 0 and Blob.objects.count() == 0


def test_presign_size_is_bounded(settings, auth_client, prompt):
    settings.PROMPT_BODY_MAX_BYTES = 1000
    response = auth_client.post(f"/api/prompts/{prompt.pk}/uploads", {"size": 1001}, format="json")
    assert response.status_code == 400 and response.json()["error"]["field"] == "size"


def test_upload_handle_is_bound_to_its_prompt(auth_client, prompt, user):
    from tests.factories import PromptFactory

    other = PromptFactory(owner=user)
    data = _text(300)
    target = _presign(auth_client, other, len(data))
    httpx.put(target["url"], content=data, headers=target["headers"]).raise_for_status()
    response = create_version(auth_client, prompt, body_upload={
        "upload": target["upload"], "sha256": hashlib.sha256(data).hexdigest()})
    assert response.status_code == 400 and response.json()["error"]["code"] == "upload_invalid"


def test_should_create_a_bucket_once_when_servers_race_for_it(settings):
    """Two `serve` processes start at once against a new bucket: neither dies of BucketAlreadyExists."""
    import threading
    import uuid

    from core.blobstore import S3BlobStore

    settings.S3_BUCKET = f"race-{uuid.uuid4().hex[:12]}"
    stores = [S3BlobStore() for _ in range(6)]
    barrier, errors = threading.Barrier(len(stores)), []

    def start(store):
        barrier.wait()
        try:
            store.ensure_bucket()
        except Exception as exc:  # what a second server would die of
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        stores[0].check()
    finally:
        stores[0].client.delete_bucket(Bucket=settings.S3_BUCKET)
