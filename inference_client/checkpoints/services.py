"""model_version_publish: a checkpoint's files into the object store, a torrent per
file, and an immutable ModelVersion whose manifest workers read from the store.

Order matters. Files go up first (content-addressed, so an upload that fails
half-way or loses a race leaves nothing wrong behind); the database row is the
commit point (one row per model and version, its manifest fixed); the torrents
and the manifest are written to the store only after that row exists and matches,
so a publish that loses to another one with other bytes never overwrites the
winner's objects. Publishing the same bytes again writes nothing new and repairs
any object missing from the store.
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction

from core.blobstore import get_blob_store
from inference_client.models import ModelVersion
from inference_protocol.checkpoints import (
    Manifest,
    ManifestError,
    ManifestFile,
    check_name,
    check_path,
    file_sha256,
    manifest_key,
    manifest_signed,
    torrent_key,
)
from inference_protocol.swarm_credentials import ca_cert_pem

from .torrents import check_piece_size, piece_size_for, torrent_build


class PublishError(Exception):
    """A publish refused, with a message naming the cause."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def _collect(paths: list[Path]) -> dict[str, Path]:
    """Checkpoint path -> file on disk. A file argument is named by its base name;
    a directory contributes every file under it, named relative to it."""
    found: dict[str, Path] = {}
    for arg in paths:
        arg = Path(arg)
        if arg.is_dir():
            entries = sorted(p for p in arg.rglob("*") if p.is_file())
            if not entries:
                raise PublishError("empty_directory", f"directory {arg} has no files")
            pairs = [(p.relative_to(arg).as_posix(), p) for p in entries]
        elif arg.is_file():
            pairs = [(arg.name, arg)]
        else:
            raise PublishError("path_not_found", f"{arg} is not a file or directory")
        for name, path in pairs:
            try:
                check_path(name)
            except ManifestError as exc:
                raise PublishError("invalid_path", str(exc)) from None
            if name in found:
                raise PublishError("duplicate_path", f"two files would be named {name!r} "
                                                     f"({found[name]} and {path})")
            if path.stat().st_size == 0:
                raise PublishError("empty_file", f"{path} is empty: a torrent cannot carry an empty file")
            found[name] = path
    return found


def _differences(manifest: dict, files: dict[str, tuple[int, str]]) -> list[str]:
    published = {f["path"]: (f["size"], f["sha256"]) for f in manifest["files"]}
    out = []
    for path in sorted(set(published) | set(files)):
        old, new = published.get(path), files.get(path)
        if old is None:
            out.append(f"{path} is not in the published version")
        elif new is None:
            out.append(f"{path} is missing (published: {old[0]} bytes)")
        elif old != new:
            out.append(f"{path}: sha256 {new[1][:16]}... ({new[0]} bytes), "
                       f"published {old[1][:16]}... ({old[0]} bytes)")
    return out


def _conflict(model: str, version: str, diffs: list[str]) -> PublishError:
    return PublishError(
        "version_conflict",
        f"{model}@{version} is already published with other bytes; publish a new version. "
        + "; ".join(diffs),
    )


def _store_version(row: ModelVersion, local: dict[str, Path],
                   torrents: dict[str, bytes] | None = None) -> int:
    """Make sure the store holds every object of ``row`` (blobs, torrents, manifest),
    building a missing torrent again unless ``torrents`` has it; returns how many
    objects were written."""
    store = get_blob_store()
    manifest = Manifest.from_dict(row.manifest)
    written = 0
    for f in manifest.files:
        if store.size(f.object_key) != f.size:
            store.put_file(f.object_key, local[f.path])
            written += 1
        key = torrent_key(manifest.model, manifest.version, f.path)
        if torrents and f.path in torrents:
            store.put(key, torrents[f.path])
            written += 1
        elif store.size(key) is None:
            built = torrent_build(local[f.path], piece_size=f.piece_size,
                                  ca_cert_pem=ca_cert_pem(settings.CONFIG_SIGNING_KEY))
            if built.info_hash_v2 != f.info_hash_v2:  # only if a file changed while we read it
                raise PublishError("file_changed", f"{local[f.path]} changed during the publish")
            store.put(key, built.data)
            written += 1
    raw = manifest_signed(manifest, settings.CONFIG_SIGNING_KEY)
    key = manifest_key(manifest.model, manifest.version)
    if store.size(key) != len(raw) or store.get(key) != raw:
        store.put(key, raw)
        written += 1
    return written


def model_version_publish(*, model: str, version: str, paths: list[Path], created_by: str,
                          piece_size: int = 0,
                          progress: Callable[[str], None] = lambda message: None,
                          ) -> tuple[ModelVersion, bool]:
    """Publish ``paths`` as ``model@version``. Returns (row, created): created is
    False when the version already holds exactly these bytes (a no-op). Raises
    PublishError when it holds other bytes, or the input is unusable."""
    try:
        check_name("model", model)
        check_name("version", version)
        if piece_size:
            check_piece_size(piece_size)
    except (ManifestError, ValueError) as exc:
        raise PublishError("invalid_argument", str(exc)) from None
    if not settings.CONFIG_SIGNING_KEY:
        raise PublishError("no_signing_key", "this process has no CONFIG_SIGNING_KEY: only the control "
                                             "plane publishes (it signs the manifest and the swarm's CA)")
    local = _collect(paths)
    hashed = {}
    for name, path in local.items():
        progress(f"hashing {name}")
        hashed[name] = (path.stat().st_size, file_sha256(path))

    existing = ModelVersion.objects.filter(model=model, version=version).first()
    if existing is None:
        store = get_blob_store()
        for name, path in local.items():
            size, digest = hashed[name]
            if store.size(f"sha256/{digest}") != size:
                progress(f"uploading {name} ({size} bytes)")
                store.put_file(f"sha256/{digest}", path)
        entries, torrents = [], {}
        for name, path in local.items():
            size, digest = hashed[name]
            progress(f"building the torrent of {name}")
            built = torrent_build(path, piece_size=piece_size or piece_size_for(size),
                                  ca_cert_pem=ca_cert_pem(settings.CONFIG_SIGNING_KEY))
            torrents[name] = built.data
            entries.append(ManifestFile(path=name, size=size, sha256=digest, piece_size=built.piece_size,
                                        info_hash_v1=built.info_hash_v1, info_hash_v2=built.info_hash_v2))
        now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        manifest = Manifest(model=model, version=version, files=tuple(entries), created_by=created_by,
                            created_at=now.isoformat())
        try:
            with transaction.atomic():
                row = ModelVersion.objects.create(
                    model=model, version=version, manifest=manifest.to_dict(),
                    manifest_sha256=hashlib.sha256(manifest.to_json()).hexdigest(),
                    total_size=manifest.total_size, created_by=created_by, created_at=now)
        except IntegrityError:  # another publish of this version won the race
            existing = ModelVersion.objects.get(model=model, version=version)
        else:
            _store_version(row, local, torrents)
            return row, True
    diffs = _differences(existing.manifest, hashed)
    if diffs:
        raise _conflict(model, version, diffs)
    _store_version(existing, local)
    return existing, False
