"""Fetching one model version: manifest and torrents from the object store, bytes
from the swarm (peers, and the object itself as a BEP 19 web seed), SHA-256 of
every file against the manifest, then the version becomes present in the cache
and stays seeded for the peers that still need it.

Every way this can fail raises FetchError with a stable code and a message that
names the cause; none leaves a file at its final name (see cache.py).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path, PurePosixPath
from typing import cast

import libtorrent as lt

from core.blobstore import BlobNotFound, BlobStore, capped_get_expiry
from inference_protocol.checkpoints import (
    Manifest,
    ManifestError,
    ManifestFile,
    ManifestSignatureError,
    file_sha256,
    manifest_key,
    manifest_load,
    torrent_key,
)
from inference_protocol.heartbeat import DOWNLOADING, FAILED, PRESENT, VERIFYING

from .cache import CheckpointCache
from .checks import FetchError, checked_torrent, probe_web_seed, store_error
from .origin_share import OriginShare
from .session import SwarmSession

logger = logging.getLogger(__name__)

RESUME_SAVE_S = 5.0
TICK_S = 0.25  # how often the download loop looks at the swarm (and moves each host's origin share)
_CHECKING = (lt.torrent_status.checking_files, lt.torrent_status.checking_resume_data)
SPACE_MARGIN = 16 * 1024 * 1024  # resume data, torrents, filesystem slack


class FetchStatus:
    """What the heartbeat and the progress bar show of one fetch."""

    def __init__(self, total_bytes: int = 0):
        self.state = DOWNLOADING
        self.done_bytes = 0
        self.total_bytes = total_bytes
        self.rate = 0.0
        self.peers = 0
        self.reason: str | None = None

    def record(self) -> dict:
        percent = 100.0 * self.done_bytes / self.total_bytes if self.total_bytes else 0.0
        return {"state": self.state, "percent": round(percent, 1), "done_bytes": self.done_bytes,
                "total_bytes": self.total_bytes, "rate": round(self.rate, 1), "peers": self.peers,
                "reason": self.reason}


class _File:
    def __init__(self, entry: ManifestFile, raw: bytes, info: lt.torrent_info):
        self.entry, self.raw, self.info = entry, raw, info
        self.handle: lt.torrent_handle | None = None
        self.url: str | None = None
        self.url_at = 0.0
        self.share: OriginShare | None = None

    def added(self) -> lt.torrent_handle:
        """The torrent's handle, once the fetch has added it."""
        assert self.handle is not None, f"{self.entry.path} was not added"
        return self.handle


class CheckpointFetch:
    def __init__(self, *, swarm: SwarmSession, store: BlobStore, cache: CheckpointCache, model: str,
                 version: str, web_seed: bool = True, stall_s: float = 120.0,
                 web_seed_expires: int = 3600, peers_known=lambda: False,
                 members=lambda fresh=False: (0, 1), origin_fallback_s: float = 10.0,
                 origin_start_at: float = 0.0):
        self.swarm, self.store, self.cache = swarm, store, cache
        self.model, self.version = model, version
        self.label = f"{model}@{version}"
        # GET URLs are capped (PRESIGN_GET_MAX_EXPIRES, 60 s): renewing at half of an uncapped
        # 3,600 s left every fetch longer than the cap facing "400 AccessDenied".
        self.web_seed, self.stall_s = web_seed, stall_s
        self.web_seed_expires = capped_get_expiry(web_seed_expires)
        self.peers_known = peers_known  # whether any peer may have the bytes (Redis, say)
        # (this host's rank, how many hosts fetch or have this version), fresh=True: read now
        self.members = members
        # no origin request before this time.monotonic(): see origin_share
        self.origin_fallback_s, self.origin_start_at = origin_fallback_s, origin_start_at
        self.status = FetchStatus()
        self.files: list[_File] = []
        self.resumed_bytes = 0
        self.uploaded_before = 0  # by handles since removed (the download's, before seeding)
        self.path: Path | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()

    # -- what other threads call ---------------------------------------------------
    def connect(self, host: str, port: int) -> None:
        with self._lock:
            for f in self.files:
                if f.handle is not None and f.handle.is_valid():
                    f.handle.connect_peer((host, port))

    def stop(self) -> None:
        self._stop.set()

    def banned(self) -> set[str]:
        """Peers banned for sending data that failed its hash, as host:port."""
        return {b for f in self.files if f.handle is not None for b in self.swarm.events(f.handle).banned}

    def stats(self) -> dict:
        """Totals of the alerts (bans, hash failures) and transfers, for reports."""
        events = [self.swarm.events(f.handle) for f in self.files if f.handle is not None]
        statuses = [f.handle.status() for f in self.files if f.handle is not None and f.handle.is_valid()]
        return {"hash_failures": sum(e.hash_failures for e in events),
                "banned": sorted(self.banned()),
                "resumed_bytes": self.resumed_bytes,
                "uploaded": self.uploaded_before + sum(s.total_payload_upload for s in statuses)}

    # -- the fetch ---------------------------------------------------------------------
    def run(self) -> Path:
        try:
            with self.cache.locked(self.model, self.version):
                manifest = self.cache.present(self.model, self.version)
                if manifest is None:
                    manifest, raw_manifest = self._load_manifest()
                    self.status.total_bytes = manifest.total_size
                    self.files = self._load_torrents(manifest)
                    self._check_space(manifest)
                    self._download()
                    self._verify(manifest)
                    self._finish(manifest, raw_manifest)
                else:
                    self.status.total_bytes = self.status.done_bytes = manifest.total_size
                    self.files = self._local_torrents(manifest)
                self._seed()
        except FetchError as exc:
            self.status.state, self.status.reason = FAILED, str(exc)
            raise
        self.status.state = PRESENT
        self.path = self.cache.final_dir(self.model, self.version)
        return self.path

    def _load_manifest(self) -> tuple[Manifest, bytes]:
        key = manifest_key(self.model, self.version)
        try:
            raw = self.store.get(key)
        except BlobNotFound:
            raise FetchError("version_not_found", f"{self.label} does not exist: the object store "
                                                  f"({self.store.describe()}) has no {key}") from None
        except Exception as exc:  # any other answer of the store (auth, 5xx, unreachable)
            raise store_error(self.store, key, exc) from None
        try:
            return manifest_load(raw, model=self.model, version=self.version,
                                 public_key=self.cache.public_key), raw
        except ManifestSignatureError as exc:
            raise FetchError("manifest_signature", f"{exc}; nothing of {self.label} was fetched "
                                                   "or loaded") from None
        except ManifestError as exc:
            raise FetchError("manifest_invalid",
                             f"the manifest of {self.label} is not valid: {exc}") from None

    def _load_torrents(self, manifest: Manifest) -> list[_File]:
        files = []
        for entry in manifest.files:
            key = torrent_key(self.model, self.version, entry.path)
            try:
                raw = self.store.get(key)
            except BlobNotFound:
                raise FetchError("torrent_missing", f"{self.label}: the object store has no {key}") from None
            except Exception as exc:
                raise store_error(self.store, key, exc) from None
            files.append(_File(entry, raw, checked_torrent(self.label, key, raw, entry)))
        return files

    def _local_torrents(self, manifest: Manifest) -> list[_File]:
        state = self.cache.state_dir(self.model, self.version) / "torrents"
        out = []
        for entry in manifest.files:
            raw = (state / f"{entry.path}.torrent").read_bytes()
            out.append(_File(entry, raw, checked_torrent(self.label, entry.path, raw, entry)))
        return out

    def _check_space(self, manifest: Manifest) -> None:
        have = self.cache.bytes_on_disk(self.model, self.version)
        need = max(0, manifest.total_size - have) + SPACE_MARGIN
        free = self.cache.free_bytes()
        if need > free:
            raise FetchError(
                "no_space",
                f"not enough space for {self.label} in {self.cache.root}: {_mb(free)} free, {_mb(need)} "
                f"needed ({_mb(manifest.total_size)} in all, {_mb(have)} already here)")

    def _web_seed_url(self, f: _File) -> str | None:
        url = self.store.http_url(f.entry.object_key, expires=self.web_seed_expires)
        if url is None:
            refusal: str | None = (f"the object store ({self.store.describe()}) gives no HTTP URL "
                                   "for a web seed")
        else:
            refusal = probe_web_seed(url)
        if refusal is None:
            f.url_at = time.monotonic()
            return url
        if not self.peers_known():
            raise FetchError("web_seed_refused", f"{self.label}: {refusal} for {f.entry.path}, "
                                                 "and no peer has it")
        logger.warning("%s: %s for %s; fetching from peers only", self.label, refusal, f.entry.path)
        self.status.reason = refusal
        return None

    def _download(self) -> None:
        partial = self.cache.partial_dir(self.model, self.version)
        for f in self.files:
            resume = self.cache.resume_file(self.model, self.version, f.entry.info_hash_v2)
            params = lt.read_resume_data(resume.read_bytes()) if resume.exists() else lt.add_torrent_params()
            params.ti = f.info
            params.save_path = str(partial / PurePosixPath(f.entry.path).parent)
            f.url = self._web_seed_url(f) if self.web_seed else None
            params.url_seeds = []  # the origin share attaches it (origin_share.py)
            if f.url:
                rank, members = self.members()
                f.share = OriginShare(f.info.num_pieces(), f.url, rank=rank, members=members,
                                      fallback_s=self.origin_fallback_s, start_at=self.origin_start_at)
            # Resume data keeps the priorities an origin share had set: start afresh.
            params.piece_priorities = f.share.priorities if f.share else [4] * f.info.num_pieces()
            params.flags = (params.flags | lt.torrent_flags.override_web_seeds) & ~(
                lt.torrent_flags.auto_managed | lt.torrent_flags.paused)
            with self._lock:
                f.handle = self.swarm.add(params)
            if f.share is not None:
                f.share.handle = f.handle
        started, last_save = None, time.monotonic()
        best, best_at = -1, time.monotonic()
        settled = False
        while True:
            statuses = [f.added().status() for f in self.files]
            self._check_errors(statuses)
            done = sum(s.total_done for s in statuses)
            checking = any(s.state in _CHECKING for s in statuses)
            if started is None and not checking:
                started, self.resumed_bytes = time.monotonic(), done
            self.status.done_bytes = done
            self.status.rate = float(sum(s.download_payload_rate for s in statuses))
            self.status.peers = max(s.num_peers for s in statuses)
            if all(s.is_seeding for s in statuses):
                return
            now = time.monotonic()
            if not checking:
                fresh = not settled and now >= self.origin_start_at  # who else fetches it: read once more
                settled = settled or fresh
                rank, members = self.members(fresh)
                for f, s in zip(self.files, statuses, strict=True):
                    if f.share is not None and not s.is_seeding:
                        events = self.swarm.events(f.handle)
                        f.share.update(s, rank, members, now, events.failed_pieces, events.web_seed_failures)
            if done > best or checking:
                best, best_at = done, now
            elif now - best_at > self.stall_s:
                raise FetchError("stalled", self._stall_reason(done))
            if now - last_save > RESUME_SAVE_S:
                self._save_resume()
                last_save = now
            self._renew_web_seeds(now)
            if self._stop.wait(TICK_S):
                self._save_resume()
                raise FetchError("interrupted",
                                 f"{self.label}: stopped at {_mb(done)} of {_mb(self.status.total_bytes)}; "
                                 "a restart resumes from there")

    def _check_errors(self, statuses) -> None:
        for f, s in zip(self.files, statuses, strict=True):
            error = self.swarm.events(f.handle).error
            if s.errc.value() or error:
                raise FetchError("storage_error",
                                 f"{self.label}: {f.entry.path}: {error or s.errc.message()}")

    def _stall_reason(self, done: int) -> str:
        seeds = "; ".join(f"{f.entry.path}: {e}" for f in self.files
                          if (e := self.swarm.events(f.handle).web_seed_error))
        return (f"{self.label}: no progress for {self.stall_s:.0f} s at {_mb(done)} of "
                f"{_mb(self.status.total_bytes)}, {self.status.peers} peer(s) connected"
                + (f"; the web seed answered: {seeds}" if seeds else "")
                + (f"; {self.status.reason}" if self.status.reason else ""))

    def _renew_web_seeds(self, now: float) -> None:
        """A presigned URL expires: hand libtorrent a fresh one at half its life."""
        for f in self.files:
            if f.url and f.share is not None and now - f.url_at > self.web_seed_expires / 2:
                # The store gave this file a URL before: it gives one again.
                url = cast(str, self.store.http_url(f.entry.object_key, expires=self.web_seed_expires))
                f.share.renew(url)
                f.url, f.url_at = url, now

    def _save_resume(self) -> None:
        for f in self.files:
            if f.added().need_save_resume_data() and (data := self.swarm.save_resume(f.added())):
                path = self.cache.resume_file(self.model, self.version, f.entry.info_hash_v2)
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                tmp.write_bytes(data)
                tmp.replace(path)

    def _verify(self, manifest: Manifest) -> None:
        self.status.state = VERIFYING
        partial = self.cache.partial_dir(self.model, self.version)
        for f in self.files:
            # A piece passes its hash check from memory; its blocks may still be on
            # their way to the file (a loaded disk thread): read the file once they are in.
            self.swarm.save_resume(f.added(), flush=True)
        for f in self.files:
            digest = file_sha256(partial / f.entry.path)
            if digest != f.entry.sha256:
                self._drop(f)
                raise FetchError(
                    "manifest_mismatch",
                    f"the manifest of {self.label} does not match the bytes: {f.entry.path} has SHA-256 "
                    f"{digest}, the manifest says {f.entry.sha256}; the file was deleted")

    def _drop(self, f: _File) -> None:
        self.swarm.remove(f.handle)
        f.handle = None
        (self.cache.partial_dir(self.model, self.version) / f.entry.path).unlink(missing_ok=True)
        self.cache.resume_file(self.model, self.version, f.entry.info_hash_v2).unlink(missing_ok=True)

    def _finish(self, manifest: Manifest, raw_manifest: bytes) -> None:
        for f in self.files:  # files closed before their directory is renamed
            self.uploaded_before += f.added().status().total_payload_upload
            self.swarm.remove(f.added())
            f.handle = None
        self.cache.write_state(manifest, raw_manifest, {f.entry.path: f.raw for f in self.files})
        self.cache.publish(self.model, self.version)

    def _seed(self) -> None:
        """Serve the verified copy. seed_mode skips the start-up recheck, and
        libtorrent hashes each piece before it first uploads it, so a copy damaged
        on disk since is caught by its owner instead of being sent out."""
        final = self.cache.final_dir(self.model, self.version)
        for f in self.files:
            params = lt.add_torrent_params()
            params.ti = f.info
            params.save_path = str(final / PurePosixPath(f.entry.path).parent)
            params.flags = (params.flags | lt.torrent_flags.seed_mode) & ~(
                lt.torrent_flags.auto_managed | lt.torrent_flags.paused)
            with self._lock:
                f.handle = self.swarm.add(params)


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"
