"""Deleting a batch's input file: refused while the batch runs (409), allowed once it
has ended (the batch keeps the file's id). Found by the API fuzzer: a 500
(ProtectedError) before."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from inference_client.models import Batch
from tests.factories import ApiKeyFactory

pytestmark = pytest.mark.django_db


def _client_with_batch(user, settings):
    settings.BATCH_DISPATCH = "none"
    _, raw = ApiKeyFactory.create_with_raw(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    model = client.get("/v1/models").json()["data"][0]["id"]
    line = {"custom_id": "r1", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": model, "messages": [{"role": "user", "content": "hi"}]}}
    f = client.post("/v1/files", {"purpose": "batch", "file": SimpleUploadedFile(
        "in.jsonl", json.dumps(line).encode() + b"\n")}, format="multipart").json()
    batch = client.post("/v1/batches", {"input_file_id": f["id"], "endpoint": "/v1/chat/completions",
                                        "completion_window": "24h"}, format="json").json()
    return client, f["id"], batch["id"]


def test_should_refuse_deleting_the_input_of_a_running_batch(user, settings):
    client, file_id, batch_id = _client_with_batch(user, settings)
    response = client.delete(f"/v1/files/{file_id}")
    assert response.status_code == 409, response.content
    assert response.json()["error"]["code"] == "file_in_use"


@pytest.mark.parametrize("status", [Batch.Status.COMPLETED, Batch.Status.CANCELLED])
def test_should_delete_the_input_of_an_ended_batch_which_keeps_its_id(user, settings, status):
    client, file_id, batch_id = _client_with_batch(user, settings)
    Batch.objects.filter(pk=batch_id).update(status=status)
    response = client.delete(f"/v1/files/{file_id}")
    assert response.status_code == 200, response.content
    assert response.json()["deleted"] is True
    assert client.get(f"/v1/files/{file_id}").status_code == 404
    assert client.get(f"/v1/batches/{batch_id}").json()["input_file_id"] == file_id
