"""The embedded default (no S3): the same upload flow through the app's own
signed, expiring blob endpoint."""

import hashlib
import time

import pytest
from django.urls import reverse

from core.blobstore import LocalBlobStore, get_blob_store
from playground.models import PromptVersion
from tests.playground.conftest import create_version

pytestmark = pytest.mark.django_db


@pytest.fixture
def local_store(settings, tmp_path):
    settings.S3_BUCKET = ""
    settings.LOCAL_BLOB_DIR = tmp_path
    get_blob_store.cache_clear()
    assert isinstance(get_blob_store(), LocalBlobStore)
    yield
    get_blob_store.cache_clear()


def test_local_presigned_put_stores_exact_size_and_get_serves_it(local_store, settings, auth_client, prompt):
    data = ("local body line\n" * 5000).encode()  # 80 KB: stored as a blob
    target = auth_client.post(f"/api/prompts/{prompt.pk}/uploads", {"size": len(data)}, format="json").json()
    wrong = auth_client.generic("PUT", target["url"], data[:-1], content_type="application/octet-stream")
    assert wrong.status_code == 400
    assert auth_client.generic("PUT", target["url"], data,
                               content_type="application/octet-stream").status_code == 200
    version = create_version(auth_client, prompt, body_upload={
        "upload": target["upload"], "sha256": hashlib.sha256(data).hexdigest()}).json()
    signed = auth_client.get(f"/api/prompts/{prompt.pk}/versions/{version['id']}/body?presign=1").json()
    assert b"".join(auth_client.get(signed["url"]).streaming_content) == data
    assert auth_client.generic("PUT", signed["url"], b"x").status_code == 405  # a GET grant only
    # A GET grant lives its own signed lifetime, and never past the 60 s cap.
    store = get_blob_store()
    key = f"sha256/{hashlib.sha256(data).hexdigest()}"
    long = store.presign_get(key, expires=3600).rsplit("/", 1)[-1]
    assert store.unsign(long, max_age=60)["d"] <= time.time() + 60
    past = reverse("blob-local", args=[store.sign(key, "GET", expires=-1)])
    refused = auth_client.get(past)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "url_expired"
    settings.PRESIGN_GET_MAX_EXPIRES = -1  # every token is now past the cap
    assert auth_client.get(signed["url"]).status_code == 403
    assert auth_client.get(signed["url"][:-3] + "abc").status_code == 403
    assert PromptVersion.objects.count() == 1
