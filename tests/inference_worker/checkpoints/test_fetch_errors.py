"""model_fetch refuses bad input with a message naming the cause, and never leaves
a file at its final name (the version's directory appears only once verified)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
from django.conf import settings

from core.blobstore import get_blob_store
from inference_protocol.checkpoints import manifest_key, manifest_signed, torrent_key

from .hosts import ROOT

pytestmark = pytest.mark.needs_services


def fetch(model, version, cache, env, *, wrap=()) -> subprocess.CompletedProcess:
    args = [sys.executable, "manage.py", "model_fetch", "--model", model, "--version", version,
            "--cache", str(cache), "--json"]
    return subprocess.run([*wrap, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=90)


def failure(result) -> dict:
    assert result.returncode == 1, result.stdout + result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert events[-1]["event"] == "failed", result.stdout
    assert events[-1]["reason"] in result.stderr  # the CLI says it too
    return events[-1]


def assert_nothing_final(cache, model, version):
    assert not (cache / model / version).exists()


def test_a_version_that_does_not_exist_is_named(db, tmp_path, env_for):
    event = failure(fetch("nomodel", "v9", tmp_path, env_for()))
    assert event["code"] == "version_not_found"
    assert "nomodel@v9 does not exist" in event["reason"]
    assert "models/nomodel/v9/manifest.json" in event["reason"]


def test_a_manifest_that_does_not_match_the_bytes_fails_after_download_and_keeps_nothing(
        publish, tmp_path, env_for):
    published = publish({"model.bin": 400_000})
    # A control plane that signed a wrong hash (the bytes are checked even so).
    wrong = dataclasses.replace(published.manifest.files[0], sha256="0" * 64)
    doctored = dataclasses.replace(published.manifest, files=(wrong,))
    store = get_blob_store()
    store.put(manifest_key(published.model, "v1"), manifest_signed(doctored, settings.CONFIG_SIGNING_KEY))
    # The store holds bytes under that name (they are not what the name says).
    store.copy(published.manifest.files[0].object_key, "sha256/" + "0" * 64)
    event = failure(fetch(published.model, "v1", tmp_path, env_for()))
    assert event["code"] == "manifest_mismatch"
    assert "does not match the bytes: model.bin has SHA-256" in event["reason"]
    assert_nothing_final(tmp_path, published.model, "v1")
    assert not (tmp_path / published.model / "v1.partial" / "model.bin").exists()


def test_a_torrent_of_another_version_is_refused(publish, tmp_path, env_for):
    v1 = publish({"model.bin": 300_000})
    model = v1.model
    publish({"model.bin": 300_000}, model=model, version="v2")
    store = get_blob_store()
    store.put(torrent_key(model, "v1", "model.bin"), store.get(torrent_key(model, "v2", "model.bin")))
    event = failure(fetch(model, "v1", tmp_path, env_for()))
    assert event["code"] == "torrent_mismatch"
    assert f"the manifest names {v1.manifest.files[0].info_hash_v2}" in event["reason"]
    assert "a torrent of another version?" in event["reason"]
    assert_nothing_final(tmp_path, model, "v1")


def test_a_cache_without_space_says_how_much_is_needed(publish, tmp_path, env_for):
    published = publish({"model.bin": 3_000_000})
    small = tmp_path / "small"
    small.mkdir()
    # A 2 MB filesystem of our own, in a private mount namespace (nothing else sees it).
    wrap = ["unshare", "--mount", "sh", "-c", f'mount -t tmpfs -o size=2m none {small} && exec "$@"', "sh"]
    event = failure(fetch(published.model, "v1", small, env_for(), wrap=wrap))
    assert event["code"] == "no_space"
    assert f"not enough space for {published.label} in {small}" in event["reason"]
    assert "MB free" in event["reason"] and "19.8 MB needed (3.0 MB in all" in event["reason"]


def test_an_object_store_that_refuses_the_web_seed_url_is_named(publish, tmp_path, env_for):
    published = publish({"model.bin": 300_000})
    get_blob_store().delete(published.manifest.files[0].object_key)
    event = failure(fetch(published.model, "v1", tmp_path, env_for()))
    assert event["code"] == "web_seed_refused"
    assert "the object store refused the web-seed URL (HTTP 404: NoSuchKey" in event["reason"]
    assert "for model.bin, and no peer has it" in event["reason"]
    assert_nothing_final(tmp_path, published.model, "v1")


@pytest.mark.parametrize("spec", ["not-a-dict", {"model": "m"}, {"model": "m", "version": "v1", "x": 1}])
def test_a_worker_spec_with_a_malformed_checkpoint_is_refused(spec):
    from inference_worker.engines.base import EngineLoadError
    from inference_worker.runtime import _with_checkpoint

    with pytest.raises(EngineLoadError, match="checkpoint must be"):
        _with_checkpoint("m", {"engine": "llamacpp", "checkpoint": spec})
