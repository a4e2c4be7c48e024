"""Model checkpoints as the control plane publishes them and workers read them.

A published model version is, in the object store:

- every file once, content-addressed: ``sha256/<hex>`` (shared with other blobs);
- one BitTorrent torrent per file: ``models/<model>/<version>/torrents/<path>.torrent``;
- the manifest: ``models/<model>/<version>/manifest.json``.

A worker needs nothing else (no database): it reads the manifest and the torrents
through ``core.blobstore``, checks every torrent against the info hashes the manifest
names, and joins each file's swarm with a presigned URL of the object as web seed.

The manifest is canonical JSON (sorted keys, no spaces), so its bytes, and their
SHA-256, are the same wherever it is rebuilt. The stored object is that JSON plus
``signature``: the control plane's Ed25519 signature (CONFIG_SIGNING_KEY) of the
manifest's canonical bytes. ``manifest_load`` is the one place that turns stored
bytes into a Manifest, and it checks the signature against CONFIG_PUBLIC_KEY before
anything else: an unsigned or altered manifest (hence any torrent whose info hash
it names) never reaches a host's loader.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path, PurePosixPath
from typing import Any

from core.canonical import canonical_json
from inference_protocol.signing import sign, verifies

MANIFEST_FORMAT = 1
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_HEX40 = re.compile(r"^[0-9a-f]{40}$")


class ManifestError(ValueError):
    """The manifest is malformed, or does not describe what it is said to."""


class ManifestSignatureError(ManifestError):
    """The manifest is unsigned, or its signature is not the control plane's."""


def check_name(what: str, value: str) -> str:
    """Model and version names become object-store keys and directory names."""
    if not isinstance(value, str) or not NAME_PATTERN.fullmatch(value) or value in {".", ".."}:
        raise ManifestError(
            f"{what} name {value!r} is not valid: use 1-100 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return value


def check_path(path: str) -> str:
    """A file path inside a checkpoint: relative, '/'-separated, no '..' or empty parts."""
    parts = PurePosixPath(path).parts if isinstance(path, str) else ()
    if (not parts or path.startswith("/") or "\\" in path or path != "/".join(parts)
            or any(p in {".", ".."} for p in parts)):
        raise ManifestError(f"file path {path!r} is not a safe relative path")
    return path


def version_prefix(model: str, version: str) -> str:
    return f"models/{check_name('model', model)}/{check_name('version', version)}/"


def manifest_key(model: str, version: str) -> str:
    return version_prefix(model, version) + "manifest.json"


def torrent_key(model: str, version: str, path: str) -> str:
    return version_prefix(model, version) + f"torrents/{check_path(path)}.torrent"


def blob_key(sha256: str) -> str:
    return f"sha256/{sha256}"


@dataclasses.dataclass(frozen=True)
class ManifestFile:
    path: str            # relative path inside the checkpoint directory
    size: int
    sha256: str          # of the whole file, checked after the swarm delivered it
    piece_size: int
    info_hash_v1: str    # SHA-1 of the torrent's info dict (hex)
    info_hash_v2: str    # SHA-256 of the torrent's info dict (hex)

    @property
    def object_key(self) -> str:
        return blob_key(self.sha256)


@dataclasses.dataclass(frozen=True)
class Manifest:
    model: str
    version: str
    files: tuple[ManifestFile, ...]
    created_by: str
    created_at: str      # ISO 8601, UTC
    format: int = MANIFEST_FORMAT

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def label(self) -> str:
        return f"{self.model}@{self.version}"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"files": [dataclasses.asdict(f) for f in self.files]}

    def to_json(self) -> bytes:
        return canonical_json(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Manifest:
        try:
            if data["format"] != MANIFEST_FORMAT:
                raise ManifestError(f"manifest format {data['format']!r} is not {MANIFEST_FORMAT}")
            files = tuple(ManifestFile(**f) for f in data["files"])
            manifest = cls(model=data["model"], version=data["version"], files=files,
                           created_by=data["created_by"], created_at=data["created_at"])
        except (KeyError, TypeError) as exc:
            raise ManifestError(f"manifest is missing or has unexpected fields ({exc})") from None
        manifest.check()
        return manifest

    def check(self) -> None:
        check_name("model", self.model)
        check_name("version", self.version)
        if not self.files:
            raise ManifestError(f"{self.label}: the manifest lists no files")
        seen = set()
        for f in self.files:
            check_path(f.path)
            if f.path in seen:
                raise ManifestError(f"{self.label}: file {f.path!r} is listed twice")
            seen.add(f.path)
            if not isinstance(f.size, int) or f.size <= 0:
                raise ManifestError(f"{self.label}: file {f.path!r} has size {f.size!r}")
            if not (_HEX64.fullmatch(f.sha256) and _HEX64.fullmatch(f.info_hash_v2)
                    and _HEX40.fullmatch(f.info_hash_v1)):
                raise ManifestError(f"{self.label}: file {f.path!r} has malformed hashes")


# How much of a file is read at a time to hash it.
HASH_CHUNK = 8 * 1024 * 1024


def file_sha256(path: Path) -> str:
    """The SHA-256 (hex) of a file's content, as a manifest lists it."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def manifest_signed(manifest: Manifest, private_b64: str) -> bytes:
    """The stored form: the manifest's canonical JSON with the control plane's signature."""
    return canonical_json(manifest.to_dict() | {"signature": sign(private_b64, manifest.to_json())})


def manifest_load(raw: bytes, *, model: str, version: str, public_key: str) -> Manifest:
    """Verify and parse stored manifest bytes (``public_key``: CONFIG_PUBLIC_KEY), and
    refuse a manifest of another model or version."""
    label = f"{model}@{version}"
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ManifestError(f"manifest of {label} is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ManifestError(f"manifest of {label} is not a JSON object")
    signature = data.pop("signature", None)
    if not public_key:
        raise ManifestSignatureError(f"cannot verify the manifest of {label}: this node has no "
                                     "CONFIG_PUBLIC_KEY")
    if not isinstance(signature, str) or not signature:
        raise ManifestSignatureError(f"the manifest of {label} is unsigned: only manifests signed by "
                                     "the control plane are loaded")
    if not verifies(public_key, canonical_json(data), signature):
        raise ManifestSignatureError(f"the manifest of {label} was altered or signed by another key: "
                                     "its signature does not verify with this node's CONFIG_PUBLIC_KEY")
    manifest = Manifest.from_dict(data)
    if (manifest.model, manifest.version) != (model, version):
        raise ManifestError(
            f"the manifest stored for {model}@{version} describes {manifest.label}"
        )
    return manifest
