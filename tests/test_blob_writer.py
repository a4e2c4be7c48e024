"""BlobStore.writer: bytes stored as they come, one part in memory (a multipart
upload on S3, chunked writes to the local store), whole or not at all. Runs on
the configured store: rclone's S3 in the services pass, the local one in the
embedded pass."""

import hashlib
import os
import uuid

import pytest

from core.blobstore import get_blob_store

MiB = 1024 * 1024


@pytest.fixture
def store(settings):
    settings.S3_STREAM_PART_BYTES = 5 * MiB  # S3's least part: three parts for 11 MiB
    return get_blob_store()


def test_should_store_a_file_written_in_chunks_across_several_parts_only_when_committed(store):
    key = f"test-writer/{uuid.uuid4().hex}"
    chunks = [os.urandom(64 * 1024) for _ in range(11 * 16)]  # 11 MiB
    with store.writer(key) as w:
        for i, chunk in enumerate(chunks):
            w.write(chunk)
            if i == 100:  # 6.3 MiB written: a part sent, nothing to read yet
                assert store.size(key) is None
    assert w.bytes == 11 * MiB
    assert store.size(key) == 11 * MiB
    digest = hashlib.sha256()
    for piece in store.iter_chunks(key):
        digest.update(piece)
    assert digest.hexdigest() == hashlib.sha256(b"".join(chunks)).hexdigest()
    store.delete(key)


def test_a_small_file_is_one_object_and_a_failed_write_leaves_nothing(store):
    small = f"test-writer/{uuid.uuid4().hex}"
    with store.writer(small) as w:
        w.write(b'{"a": 1}\n')
        w.write(b'{"b": 2}\n')
    assert store.get(small) == b'{"a": 1}\n{"b": 2}\n'
    store.delete(small)

    failed = f"test-writer/{uuid.uuid4().hex}"
    with pytest.raises(RuntimeError), store.writer(failed) as w:
        w.write(os.urandom(6 * MiB))  # one part already sent
        raise RuntimeError("the producer failed")
    assert store.size(failed) is None
