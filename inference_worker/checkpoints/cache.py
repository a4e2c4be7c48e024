"""The checkpoint cache on a worker's disk.

    <root>/<model>/<version>/          the checkpoint's files, exactly as published;
                                       it exists only once every file was verified
    <root>/<model>/<version>.partial/  files being downloaded (never at final names)
    <root>/<model>/<version>.state/    manifest.json (signed) and torrents of what is here,
                                       resume/ (pieces held, for a restart)
    <root>/<model>/<version>.lock      held while one process fetches the version

A version is present when its directory exists: it appears by one rename of the
partial directory after the SHA-256 of every file matched the manifest, so a
half-downloaded checkpoint never looks complete, even after a crash.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from pathlib import Path

from inference_protocol.checkpoints import Manifest, ManifestError, manifest_load


class CheckpointCache:
    def __init__(self, root: Path | str, *, public_key: str):
        self.root = Path(root)
        self.public_key = public_key  # CONFIG_PUBLIC_KEY: every manifest read is verified

    def final_dir(self, model: str, version: str) -> Path:
        return self.root / model / version

    def partial_dir(self, model: str, version: str) -> Path:
        return self.root / model / f"{version}.partial"

    def state_dir(self, model: str, version: str) -> Path:
        return self.root / model / f"{version}.state"

    def resume_file(self, model: str, version: str, info_hash: str) -> Path:
        return self.state_dir(model, version) / "resume" / f"{info_hash}.resume"

    @contextlib.contextmanager
    def locked(self, model: str, version: str):
        """One fetch of a version at a time across the processes sharing this cache."""
        path = self.root / model / f"{version}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def present(self, model: str, version: str) -> Manifest | None:
        """The manifest of a verified copy in the cache, if there is one whose files
        all exist with their sizes (a full rehash is the fetch's job, not start-up's) and
        whose manifest still verifies."""
        final = self.final_dir(model, version)
        try:
            manifest = manifest_load((self.state_dir(model, version) / "manifest.json").read_bytes(),
                                     model=model, version=version, public_key=self.public_key)
        except (OSError, ManifestError):
            return None
        for f in manifest.files:
            try:
                if (final / f.path).stat().st_size != f.size:
                    return None
            except OSError:
                return None
        return manifest

    def bytes_on_disk(self, model: str, version: str) -> int:
        """Bytes the partial files already occupy (sparse files count what is allocated)."""
        total = 0
        for dirpath, _, names in os.walk(self.partial_dir(model, version)):
            for name in names:
                with contextlib.suppress(OSError):
                    total += os.stat(os.path.join(dirpath, name)).st_blocks * 512
        return total

    def free_bytes(self) -> int:
        self.root.mkdir(parents=True, exist_ok=True)
        return shutil.disk_usage(self.root).free

    def write_state(self, manifest: Manifest, raw_manifest: bytes, torrents: dict[str, bytes]) -> None:
        """Keep the manifest as stored (with its signature) and the torrents."""
        state = self.state_dir(manifest.model, manifest.version)
        for path, data in torrents.items():
            _write_atomic(state / "torrents" / f"{path}.torrent", data)
        _write_atomic(state / "manifest.json", raw_manifest)

    def publish(self, model: str, version: str) -> Path:
        """Make a verified partial directory the version's directory, in one rename."""
        final = self.final_dir(model, version)
        if final.exists():  # a copy that failed its check earlier: keep what was verified now
            shutil.rmtree(final)
        self.partial_dir(model, version).rename(final)
        shutil.rmtree(self.state_dir(model, version) / "resume", ignore_errors=True)
        return final


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
