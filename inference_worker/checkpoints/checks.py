"""Checking what a fetch reads before it trusts it: a stored torrent against the
manifest, the object store's web-seed URL; and the error every failed fetch raises."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import httpx
import libtorrent as lt

from core.blobstore import BlobStore
from inference_protocol.checkpoints import ManifestFile


class FetchError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code



def checked_torrent(label: str, where: str, raw: bytes, entry: ManifestFile) -> lt.torrent_info:
    """The torrent's info dict (and v2 piece layers) only: trackers and web seeds in
    a stored torrent are ignored; its info hashes must be the manifest's, and it must
    be private and SSL (session.py)."""
    try:
        decoded = lt.bdecode(raw)
        if not isinstance(decoded, dict) or b"info" not in decoded:
            raise ValueError("no info dictionary")
        kept = {k: v for k, v in decoded.items() if k in (b"info", b"piece layers")}
        info = lt.torrent_info(lt.bencode(kept))  # type: ignore[arg-type]  # stub: any bdecode'd dict
    except (RuntimeError, ValueError, TypeError) as exc:
        raise FetchError("torrent_invalid", f"{label}: {where} is not a valid torrent ({exc})") from None
    hashes = info.info_hashes()
    if str(hashes.v2) != entry.info_hash_v2 or str(hashes.v1) != entry.info_hash_v1:
        raise FetchError(
            "torrent_mismatch",
            f"{label}: {where} has info hash {hashes.v2}, but the manifest names {entry.info_hash_v2} "
            f"for {entry.path} (a torrent of another version?)")
    name = PurePosixPath(entry.path).name
    if info.num_files() != 1 or info.total_size() != entry.size or info.name() != name:
        raise FetchError("torrent_mismatch", f"{label}: {where} does not describe {entry.path} "
                                             f"({entry.size} bytes) alone")
    if not info.priv() or not info.ssl_cert():
        raise FetchError("torrent_not_private", f"{label}: {where} is not a private SSL torrent; "
                                                "publish the version again with this release")
    return info


def store_error(store: BlobStore, key: str, exc: Exception) -> FetchError:
    return FetchError("store_error",
                      f"could not read {key} from the object store ({store.describe()}): {exc}")


def probe_web_seed(url: str) -> str | None:
    """None if the web-seed URL serves a byte range, else why not."""
    try:
        with httpx.stream("GET", url, headers={"Range": "bytes=0-0"}, timeout=10) as response:
            if response.status_code in (200, 206):  # the body is not read: a 200 may be all of it
                return None
            body = response.read()[:4096].decode(errors="replace")
    except httpx.HTTPError as exc:
        return f"the object store could not be reached for the web seed ({exc})"
    code = re.search(r"<Code>([^<]+)</Code>", body)
    message = re.search(r"<Message>([^<]+)</Message>", body)
    detail = ": ".join(m.group(1) for m in (code, message) if m)
    status = f"HTTP {response.status_code}" + (f": {detail}" if detail else "")
    return f"the object store refused the web-seed URL ({status})"
