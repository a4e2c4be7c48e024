"""model_publish: files content-addressed in S3 (multipart when large), one torrent
per file, the manifest in the database and the store; immutable versions."""

from __future__ import annotations

import hashlib
import io

import libtorrent as lt
import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, InternalError, connection, transaction

from core.blobstore import get_blob_store
from inference_client.models import ImmutableModelVersionError, ModelVersion
from inference_protocol.checkpoints import manifest_key, manifest_load, manifest_signed, torrent_key

from .origin import Origin

pytestmark = pytest.mark.needs_services

MiB = 1024 * 1024


@pytest.fixture
def store_through(settings):
    """The object store reached through a proxy that records the requests."""
    with Origin(settings.S3_ENDPOINT_URL) as proxy:
        settings.S3_ENDPOINT_URL = proxy.url
        get_blob_store.cache_clear()
        yield proxy
    get_blob_store.cache_clear()


def test_publish_uploads_files_by_content_torrents_and_the_manifest(publish, settings, store_through):
    settings.S3_MULTIPART_THRESHOLD = settings.S3_MULTIPART_CHUNKSIZE = 5 * MiB
    published = publish({"weights.bin": 11 * MiB, "cfg/config.json": 2_000})
    store = get_blob_store()

    for entry in published.manifest.files:
        data = published.files[entry.path].read_bytes()
        assert entry.sha256 == hashlib.sha256(data).hexdigest()
        assert entry.object_key == f"sha256/{entry.sha256}"
        assert store.size(entry.object_key) == len(data)
        stored = hashlib.sha256(b"".join(store.iter_chunks(entry.object_key))).hexdigest()
        assert stored == entry.sha256
        info = lt.torrent_info(store.get(torrent_key(published.model, "v1", entry.path)))
        assert (str(info.info_hashes().v1), str(info.info_hashes().v2)) == (entry.info_hash_v1,
                                                                            entry.info_hash_v2)
        assert info.num_files() == 1 and info.total_size() == len(data)
    big = next(f for f in published.manifest.files if f.path == "weights.bin")
    parts = [t for m, t in store_through.requests
             if m == "PUT" and big.object_key in t and "partNumber=" in t]
    assert len(parts) == 3, "11 MiB in 5 MiB parts is a 3-part upload"

    row = ModelVersion.objects.get(model=published.model, version="v1")
    raw = store.get(manifest_key(published.model, "v1"))
    assert manifest_load(raw, model=published.model, version="v1",
                         public_key=settings.CONFIG_PUBLIC_KEY) == published.manifest
    assert hashlib.sha256(published.manifest.to_json()).hexdigest() == row.manifest_sha256
    assert row.total_size == 11 * MiB + 2_000 and row.created_by == "tests"


def test_publishing_the_same_bytes_again_is_a_no_op_that_repairs_the_store(publish, settings):
    published = publish({"model.gguf": 300_000})
    store = get_blob_store()
    store.delete(manifest_key(published.model, "v1"))
    out = io.StringIO()
    call_command("model_publish", "--model", published.model, "--version", "v1",
                 str(published.files["model.gguf"]), stdout=out, stderr=io.StringIO())
    assert "already published with these bytes" in out.getvalue()
    assert ModelVersion.objects.filter(model=published.model).count() == 1
    assert store.get(manifest_key(published.model, "v1")) == manifest_signed(published.manifest,
                                                                             settings.CONFIG_SIGNING_KEY)


def test_publishing_other_bytes_under_a_published_version_is_refused(publish, tmp_path, settings):
    published = publish({"model.gguf": 300_000})
    other = tmp_path / "model.gguf"
    other.write_bytes(b"x" * 300_000)
    with pytest.raises(CommandError, match=r"already published with other bytes.*model.gguf: sha256"):
        call_command("model_publish", "--model", published.model, "--version", "v1", str(other),
                     stderr=io.StringIO())
    assert get_blob_store().get(manifest_key(published.model, "v1")) == manifest_signed(
        published.manifest, settings.CONFIG_SIGNING_KEY)


def test_model_versions_are_immutable_in_the_orm_and_in_the_database(publish):
    published = publish({"a.bin": 1000})
    row = ModelVersion.objects.get(model=published.model)
    row.created_by = "mallory"
    with pytest.raises(ImmutableModelVersionError):
        row.save()
    with pytest.raises(ImmutableModelVersionError):
        ModelVersion.objects.filter(pk=row.pk).update(created_by="mallory")
    with pytest.raises((IntegrityError, InternalError), match="immutable"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE inference_client_modelversion SET created_by = 'mallory' WHERE id = %s",
                           [row.pk])
    assert ModelVersion.objects.get(pk=row.pk).created_by == "tests"


@pytest.mark.parametrize("case, message", [
    ("missing", "is not a file or directory [path_not_found]"),
    ("empty", "is empty: a torrent cannot carry an empty file [empty_file]"),
    ("bad_model", "model name 'no/slash' is not valid"),
    ("bad_piece", "piece size 1000 is not a power of two"),
    ("duplicate", "two files would be named 'w.bin'"),
])
def test_publish_refuses_bad_input_with_a_clear_message(db, tmp_path, case, message):
    good = tmp_path / "w.bin"
    good.write_bytes(b"w" * 100)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "w.bin").write_bytes(b"v" * 100)
    (tmp_path / "empty.bin").touch()
    model, args = "m1", [str(good)]
    if case == "missing":
        args = [str(tmp_path / "nope.bin")]
    elif case == "empty":
        args = [str(tmp_path / "empty.bin")]
    elif case == "bad_model":
        model = "no/slash"
    elif case == "bad_piece":
        args = ["--piece-size", "1000", str(good)]
    elif case == "duplicate":
        args = [str(good), str(tmp_path / "other")]
    with pytest.raises(CommandError) as raised:
        call_command("model_publish", "--model", model, "--version", "v1", *args, stderr=io.StringIO())
    assert message in str(raised.value)
    assert not ModelVersion.objects.exists()
