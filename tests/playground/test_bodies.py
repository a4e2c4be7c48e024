import hashlib
import os

import httpx
import pytest

from core.blobstore import get_blob_store
from playground.bodies import body_cache, body_text
from playground.models import Blob, PromptVersion, Storage
from tests.factories import PromptVersionFactory

pytestmark = pytest.mark.django_db


def test_small_body_is_inline_and_large_body_is_content_addressed_once(settings, auth_client, prompt):
    small = PromptVersionFactory(prompt=prompt, body="short\n")
    assert small.payload_inline is not None and small.payload_blob is None
    # ~140 KB > 64 KiB, and incompressible, so no diff beats a snapshot.
    big = "".join(f"line {i}: {os.urandom(30).hex()}\n" for i in range(2000))
    one = PromptVersionFactory(prompt=prompt, parent=small, body=big)
    other = PromptVersionFactory(prompt=prompt, parent=one, body="different\n")
    again = PromptVersionFactory(prompt=prompt, parent=other, body=big)
    assert one.payload_blob_id == again.payload_blob_id == hashlib.sha256(big.encode()).hexdigest()
    assert Blob.objects.filter(sha256=one.payload_blob_id).count() == 1
    assert get_blob_store().get(one.payload_blob.key) == big.encode()
    meta = auth_client.get(f"/api/prompts/{prompt.pk}/versions/{again.pk}").json()
    assert meta["body"] is None and meta["body_size"] == len(big.encode())  # lazy: metadata only
    assert auth_client.get(f"/api/prompts/{prompt.pk}/versions/{small.pk}").json()["body"] == "short\n"


def test_chain_stores_diffs_with_a_snapshot_every_n_and_rebuilds_exactly(settings, prompt):
    settings.PROMPT_SNAPSHOT_EVERY = 4
    lines = [f"paragraph {i} " + "lorem ipsum " * 8 + "\n" for i in range(400)]
    versions, bodies, parent = [], [], None
    for step in range(10):
        lines[step * 7] = f"edited in step {step}\r\n"
        body = "".join(lines)
        parent = PromptVersionFactory(prompt=prompt, parent=parent, body=body)
        versions.append(parent)
        bodies.append(body)
    assert [v.chain_length for v in versions] == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
    assert [v.storage for v in versions][:2] == [Storage.FULL, Storage.DELTA]
    assert all(len(bytes(v.payload_inline)) < 2000 for v in versions if v.storage == Storage.DELTA)
    body_cache.clear()
    for version, body in zip(versions, bodies, strict=True):
        assert body_text(PromptVersion.objects.get(pk=version.pk)) == body


@pytest.mark.needs_services  # presigned GETs from the S3 server
def test_body_is_served_by_range_and_by_short_lived_presigned_get(settings, auth_client, prompt):
    body = "".join(f"{i:06d}\n" for i in range(20000))  # 140 KB: a stored snapshot
    version = PromptVersionFactory(prompt=prompt, body=body)
    url = f"/api/prompts/{prompt.pk}/versions/{version.pk}/body"
    part = auth_client.get(url, HTTP_RANGE="bytes=7-20")
    assert part.status_code == 206 and part.content == body.encode()[7:21]
    assert part["Content-Range"] == f"bytes 7-20/{len(body)}"
    assert auth_client.get(url, HTTP_RANGE="bytes=999999999-").status_code == 416
    whole = auth_client.get(url)
    assert b"".join(whole.streaming_content) == body.encode()
    signed = auth_client.get(url + "?presign=1").json()
    assert signed["expires_in"] == settings.PRESIGN_GET_EXPIRES == 60
    assert "X-Amz-Expires=60" in signed["url"]
    assert httpx.get(signed["url"]).content == body.encode()


@pytest.mark.needs_services  # presigned GETs from the S3 server
def test_presigned_get_of_a_diff_stored_body_materialises_it(settings, auth_client, prompt):
    settings.PROMPT_INLINE_MAX_BYTES = 64
    base = "".join(f"row {i}\n" for i in range(300))
    root = PromptVersionFactory(prompt=prompt, body=base)
    child = PromptVersionFactory(prompt=prompt, parent=root, body=base + "tail\n")
    assert child.storage == Storage.DELTA
    signed = auth_client.get(f"/api/prompts/{prompt.pk}/versions/{child.pk}/body?presign=1").json()
    assert httpx.get(signed["url"]).content == (base + "tail\n").encode()
