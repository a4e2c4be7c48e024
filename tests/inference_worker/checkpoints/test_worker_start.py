"""A GPU worker whose spec names a checkpoint fetches and verifies it before it
loads the engine, and only then heartbeats the model."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from django.conf import settings

from core.blobstore import get_blob_store
from inference_client.backend import CeleryBackend
from inference_protocol.backend import live_workers
from inference_protocol.checkpoints import Manifest, manifest_key, manifest_signed
from inference_protocol.generation import GenerationRequest
from inference_protocol.heartbeat import FAILED, PRESENT, read_nodes
from inference_worker.engines.llamacpp import default_model_path
from tests.inference_worker.workers import celery_worker, delete_queues
from tests.polling import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.needs_services]


@pytest.fixture
def worker_env(monkeypatch, origin, tmp_path):
    """What celery_worker passes on: S3 through the origin proxy, a fresh cache."""
    for name, value in {"S3_ENDPOINT_URL": origin.url, "MODEL_CACHE_DIR": str(tmp_path / "cache"),
                        "SWARM_LISTEN": "127.0.0.1:0", "SWARM_ADVERTISE_HOST": "127.0.0.1"}.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def model():
    name = f"ckpt-{uuid.uuid4().hex[:8]}"
    yield name
    delete_queues([f"gpu.{name}"])


def _node_state(label: str, state: str):
    return next((n["checkpoints"][label] for n in read_nodes()
                 if n["checkpoints"].get(label, {}).get("state") == state), None)


def test_worker_serves_a_model_only_after_its_checkpoint_is_verified(db, tmp_path, model, worker_env):
    from inference_client.checkpoints.services import model_version_publish

    row, _ = model_version_publish(model=model, version="v1", paths=[default_model_path()],
                                   created_by="tests")
    spec = {model: {"engine": "llamacpp", "n_seq_max": 2, "checkpoint": {"model": model, "version": "v1"}}}
    with celery_worker(spec, [f"gpu.{model}"], concurrency=4):
        wait_for(lambda: live_workers(model), timeout=120, what="the model's heartbeat")
        entry = _node_state(f"{model}@v1", PRESENT)
        assert entry is not None and entry["done_bytes"] == row.total_size
        request = GenerationRequest(request_id=uuid.uuid4().hex, model=model, max_tokens=4, seed=1,
                                    messages=[{"role": "user", "content": "Say hi."}])
        backend = CeleryBackend()
        backend.submit(request)
        events = list(backend.events(request.request_id, timeout_s=60))
        assert events[-1]["type"] == "done", events


def test_worker_with_an_unverifiable_checkpoint_never_reports_the_model(db, tmp_path, model, worker_env):
    from inference_client.checkpoints.services import model_version_publish

    src = tmp_path / "model.gguf"
    src.write_bytes(b"GGUF" + b"\0" * 200_000)
    row, _ = model_version_publish(model=model, version="v1", paths=[src], created_by="tests")
    manifest = Manifest.from_dict(row.manifest)  # a control plane that signed a wrong hash
    doctored = dataclasses.replace(manifest, files=(dataclasses.replace(manifest.files[0], sha256="1" * 64),))
    store = get_blob_store()
    store.put(manifest_key(model, "v1"), manifest_signed(doctored, settings.CONFIG_SIGNING_KEY))
    store.copy(f"sha256/{row.manifest['files'][0]['sha256']}", "sha256/" + "1" * 64)
    spec = {model: {"engine": "llamacpp", "checkpoint": {"model": model, "version": "v1"}}}
    with celery_worker(spec, [f"gpu.{model}"], concurrency=2):
        entry = wait_for(lambda: _node_state(f"{model}@v1", FAILED), timeout=60, what="a failed fetch")
        assert "does not match the bytes" in entry["reason"]
        assert live_workers(model) == []
