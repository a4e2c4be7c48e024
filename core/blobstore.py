"""Object store for large bodies: S3 (any S3-protocol server) or a local
directory with the same interface (embedded default).

Keys are content addresses (``sha256/<hex>``); callers keep size and hash in
the database, since some S3 servers keep metadata in memory only. Large files go
up with ``put_file``, streamed from disk (multipart on S3), never read whole.
"""

from __future__ import annotations

import abc
import functools
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from django.conf import settings
from django.core import signing
from django.urls import reverse


class BlobNotFound(Exception):
    pass


class BlobStore(abc.ABC):
    @abc.abstractmethod
    def put(self, key: str, data: bytes) -> None: ...

    @abc.abstractmethod
    def put_file(self, key: str, path: Path) -> None:
        """Store a file's bytes under ``key``, streamed from disk."""

    @abc.abstractmethod
    def writer(self, key: str) -> BlobWriter:
        """Store bytes under ``key`` as they are produced (``with store.writer(key) as w: w.write(...)``),
        holding at most one part in memory; nothing is stored if the block raises."""

    @abc.abstractmethod
    def get(self, key: str, byte_range: tuple[int, int] | None = None) -> bytes:
        """Whole object, or bytes [start, end) of it."""

    @abc.abstractmethod
    def size(self, key: str) -> int | None:
        """Object size in bytes, None when absent."""

    @abc.abstractmethod
    def iter_chunks(self, key: str, chunk_size: int = 1 << 20) -> Iterator[bytes]: ...

    @abc.abstractmethod
    def presign_put(self, key: str, *, size: int, expires: int) -> dict[str, Any]:
        """{"url", "method", "headers"} for a direct client upload of exactly `size` bytes."""

    @abc.abstractmethod
    def presign_get(self, key: str, *, expires: int) -> str: ...

    def http_url(self, key: str, *, expires: int) -> str | None:
        """An absolute URL that any HTTP client may GET (with Range) until it expires,
        or None when the store has none (the local directory store)."""
        return None

    @abc.abstractmethod
    def copy(self, src: str, dst: str) -> None:
        """Server-side copy; raises BlobNotFound when src is absent."""

    @abc.abstractmethod
    def delete(self, key: str) -> None:
        """Remove an object; absent is fine."""

    @abc.abstractmethod
    def check(self) -> None:
        """Raise if the store cannot be reached (for /healthz)."""

    @abc.abstractmethod
    def ensure_bucket(self) -> None:
        """Make the bucket (or directory) if it is missing (a server's start)."""

    @abc.abstractmethod
    def describe(self) -> str: ...


class BlobWriter(abc.ABC):
    """Bytes written in order, stored on ``commit`` as one object: readers never
    see part of it, and an aborted writer leaves nothing behind."""

    def __init__(self) -> None:
        self.bytes = 0

    def write(self, data: bytes) -> None:
        self.bytes += len(data)
        self._write(data)

    @abc.abstractmethod
    def _write(self, data: bytes) -> None: ...

    @abc.abstractmethod
    def commit(self) -> None: ...

    @abc.abstractmethod
    def abort(self) -> None: ...

    def __enter__(self) -> BlobWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


class _S3Writer(BlobWriter):
    """A multipart upload of S3_STREAM_PART_BYTES parts, begun when the first part
    fills; an object smaller than one part is a single PUT."""

    def __init__(self, store: S3BlobStore, key: str):
        super().__init__()
        self.client, self.bucket, self.key = store.client, store.bucket, key
        self.part_bytes = max(5 * 1024 * 1024, settings.S3_STREAM_PART_BYTES)  # S3's least part
        self.buffer = bytearray()
        self.upload_id: str | None = None
        self.parts: list[dict[str, Any]] = []

    def _write(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) >= self.part_bytes:
            self._send_part()

    def _send_part(self) -> None:
        if self.upload_id is None:
            self.upload_id = self.client.create_multipart_upload(Bucket=self.bucket, Key=self.key)["UploadId"]
        number = len(self.parts) + 1
        # The buffer itself is the body (no copy): one part in memory at a time.
        sent = self.client.upload_part(Bucket=self.bucket, Key=self.key, UploadId=self.upload_id,
                                       PartNumber=number, Body=self.buffer)
        self.parts.append({"ETag": sent["ETag"], "PartNumber": number})
        self.buffer = bytearray()

    def commit(self) -> None:
        if self.upload_id is None:
            self.client.put_object(Bucket=self.bucket, Key=self.key, Body=self.buffer)
            return
        if self.buffer:
            self._send_part()
        self.client.complete_multipart_upload(Bucket=self.bucket, Key=self.key, UploadId=self.upload_id,
                                              MultipartUpload={"Parts": self.parts})

    def abort(self) -> None:
        if self.upload_id is not None:
            self.client.abort_multipart_upload(Bucket=self.bucket, Key=self.key, UploadId=self.upload_id)


class _FileWriter(BlobWriter):
    """Chunks appended to a temporary file beside the target, renamed into place on commit."""

    def __init__(self, target: Path):
        super().__init__()
        target.parent.mkdir(parents=True, exist_ok=True)
        self.target = target
        self.tmp = target.with_name(f"{target.name}.{secrets.token_hex(6)}.part")
        self.fh = self.tmp.open("wb")

    def _write(self, data: bytes) -> None:
        self.fh.write(data)

    def commit(self) -> None:
        self.fh.close()
        self.tmp.replace(self.target)

    def abort(self) -> None:
        self.fh.close()
        self.tmp.unlink(missing_ok=True)


class S3BlobStore(BlobStore):
    def __init__(self) -> None:
        import boto3
        from botocore.config import Config

        self.bucket = settings.S3_BUCKET
        self.client = boto3.client(
            "s3",
            endpoint_url=settings.S3_ENDPOINT_URL,
            aws_access_key_id=settings.S3_ACCESS_KEY_ID or None,
            aws_secret_access_key=settings.S3_SECRET_ACCESS_KEY or None,
            region_name=settings.S3_REGION,
            # Presigned URLs must be SigV4 for servers that check them; path style
            # works with any endpoint (no per-bucket DNS).
            # Checksums only when required: some S3 servers send the whole
            # object's checksum with a ranged GET, which botocore then rejects.
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                          request_checksum_calculation="when_required",
                          response_checksum_validation="when_required",
                          connect_timeout=3, read_timeout=30, retries={"max_attempts": 2}),
        )

    def put(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=key, Body=data)

    def put_file(self, key: str, path: Path) -> None:
        from boto3.s3.transfer import TransferConfig

        # boto3's managed transfer: multipart above the threshold, parts read from
        # disk as they are sent, each part retried on its own.
        config = TransferConfig(multipart_threshold=settings.S3_MULTIPART_THRESHOLD,
                                multipart_chunksize=settings.S3_MULTIPART_CHUNKSIZE,
                                max_concurrency=settings.S3_MULTIPART_CONCURRENCY)
        self.client.upload_file(str(path), self.bucket, key, Config=config)

    def writer(self, key: str) -> BlobWriter:
        return _S3Writer(self, key)

    def get(self, key: str, byte_range: tuple[int, int] | None = None) -> bytes:
        kwargs = {"Bucket": self.bucket, "Key": key}
        if byte_range:
            kwargs["Range"] = f"bytes={byte_range[0]}-{byte_range[1] - 1}"
        try:
            data: bytes = self.client.get_object(**kwargs)["Body"].read()
            return data
        except self.client.exceptions.NoSuchKey as exc:
            raise BlobNotFound(key) from exc

    def iter_chunks(self, key: str, chunk_size: int = 1 << 20) -> Iterator[bytes]:
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"]
        except self.client.exceptions.NoSuchKey as exc:
            raise BlobNotFound(key) from exc
        yield from body.iter_chunks(chunk_size)

    def size(self, key: str) -> int | None:
        from botocore.exceptions import ClientError

        try:
            length: int = self.client.head_object(Bucket=self.bucket, Key=key)["ContentLength"]
            return length
        except ClientError as exc:
            if exc.response["Error"]["Code"] in {"404", "NoSuchKey", "NotFound"}:
                return None
            raise

    def presign_put(self, key: str, *, size: int, expires: int) -> dict[str, Any]:
        url = self.client.generate_presigned_url(
            "put_object",
            Params={"Bucket": self.bucket, "Key": key, "ContentLength": size},
            ExpiresIn=expires,
        )
        return {"url": url, "method": "PUT", "headers": {"Content-Length": str(size)}}

    def presign_get(self, key: str, *, expires: int) -> str:
        url: str = self.client.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=capped_get_expiry(expires)
        )
        return url

    def http_url(self, key: str, *, expires: int) -> str | None:
        return self.presign_get(key, expires=expires)

    def copy(self, src: str, dst: str) -> None:
        from botocore.exceptions import ClientError

        try:
            self.client.copy_object(Bucket=self.bucket, Key=dst,
                                    CopySource={"Bucket": self.bucket, "Key": src})
        except ClientError as exc:
            if exc.response["Error"]["Code"] in {"404", "NoSuchKey", "NotFound"}:
                raise BlobNotFound(src) from exc
            raise

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=key)

    def ensure_bucket(self) -> None:
        from botocore.exceptions import ClientError

        try:
            self.client.head_bucket(Bucket=self.bucket)
        except ClientError:
            try:
                self.client.create_bucket(Bucket=self.bucket)
            except ClientError as exc:
                # Another process (a second `serve` started at the same time) made it first.
                if exc.response["Error"]["Code"] not in {"BucketAlreadyExists", "BucketAlreadyOwnedByYou"}:
                    raise

    def check(self) -> None:
        self.client.head_bucket(Bucket=self.bucket)

    def describe(self) -> str:
        return f"s3 {settings.S3_ENDPOINT_URL or 'aws'}/{self.bucket}"


class LocalBlobStore(BlobStore):
    """Files under LOCAL_BLOB_DIR; 'presigned' URLs are signed, expiring links
    to the app's own blob endpoint, so clients use one upload flow for both."""

    salt = "playground.blobstore.local"

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root or settings.LOCAL_BLOB_DIR)

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if self.root.resolve() not in path.parents:
            raise BlobNotFound(key)
        return path

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".part")
        tmp.write_bytes(data)
        tmp.replace(path)  # atomic: readers never see half an object

    def put_file(self, key: str, path: Path) -> None:
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".part")
        shutil.copyfile(path, tmp)
        tmp.replace(target)

    def writer(self, key: str) -> BlobWriter:
        return _FileWriter(self._path(key))

    def get(self, key: str, byte_range: tuple[int, int] | None = None) -> bytes:
        path = self._path(key)
        if not path.exists():
            raise BlobNotFound(key)
        with path.open("rb") as fh:
            if byte_range is None:
                return fh.read()
            fh.seek(byte_range[0])
            return fh.read(byte_range[1] - byte_range[0])

    def iter_chunks(self, key: str, chunk_size: int = 1 << 20) -> Iterator[bytes]:
        path = self._path(key)
        if not path.exists():
            raise BlobNotFound(key)
        with path.open("rb") as fh:
            while chunk := fh.read(chunk_size):
                yield chunk

    def size(self, key: str) -> int | None:
        path = self._path(key)
        return path.stat().st_size if path.exists() else None

    def copy(self, src: str, dst: str) -> None:
        source, target = self._path(src), self._path(dst)
        if not source.exists():
            raise BlobNotFound(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".part")
        shutil.copyfile(source, tmp)
        tmp.replace(target)

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def ensure_bucket(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)

    def sign(self, key: str, method: str, size: int | None = None, *, expires: int) -> str:
        """A grant of `method` on `key` until `expires` seconds from now (the deadline is signed)."""
        return signing.dumps({"k": key, "m": method, "s": size, "d": int(time.time()) + expires},
                             salt=self.salt, compress=True)

    def unsign(self, token: str, max_age: int) -> dict[str, Any]:
        grant: dict[str, Any] = signing.loads(token, salt=self.salt, max_age=max_age)
        return grant

    def presign_put(self, key: str, *, size: int, expires: int) -> dict[str, Any]:
        url = reverse("blob-local", args=[self.sign(key, "PUT", size, expires=expires)])
        return {"url": url, "method": "PUT", "headers": {"Content-Length": str(size)},
                "expires_in": expires}

    def presign_get(self, key: str, *, expires: int) -> str:
        return reverse("blob-local", args=[self.sign(key, "GET", expires=capped_get_expiry(expires))])

    def check(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        probe = self.root / ".healthz"
        probe.write_bytes(b"ok")
        probe.unlink()

    def describe(self) -> str:
        return f"local {self.root}"


def capped_get_expiry(expires: int) -> int:
    """A GET URL outlives any revocation: never more than PRESIGN_GET_MAX_EXPIRES (60 s)."""
    return max(0, min(int(expires), settings.PRESIGN_GET_MAX_EXPIRES))


@functools.cache
def get_blob_store() -> BlobStore:
    return S3BlobStore() if settings.S3_BUCKET else LocalBlobStore()
