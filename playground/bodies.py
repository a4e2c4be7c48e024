"""Version bodies: how they are stored (snapshot or diff, inline or in the
object store) and how any version's body is rebuilt byte-for-byte.

A diff is a list of ops against the parent's lines: ``[a, b]`` copies parent
lines a..b-1, a string inserts text. Lines split on "\\n" only and keep it, so
joining them gives back the exact text. Diffs are JSON, zlib-compressed.
Snapshots are the raw UTF-8 bytes, so a snapshot in the store can be served by
range or by a presigned GET without the server touching it.
"""

from __future__ import annotations

import hashlib
import json
import threading
import zlib

from cachetools import LRUCache
from django.conf import settings

from core.blobstore import get_blob_store

from .matching import Budget
from .models import Blob, PromptVersion, Storage


def split_lines(text: str) -> list[str]:
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def common_affixes(a: list, b: list) -> tuple[int, int]:
    """Lengths of the common prefix and (non-overlapping) common suffix."""
    limit = min(len(a), len(b))
    pre = 0
    while pre < limit and a[pre] == b[pre]:
        pre += 1
    suf = 0
    while suf < limit - pre and a[-1 - suf] == b[-1 - suf]:
        suf += 1
    return pre, suf


def delta_encode(base: list[str], new: list[str], budget: Budget) -> list:
    """Ops that rebuild `new` from `base`. Trimming the common ends first makes
    small edits of huge bodies linear; only the changed middle is matched."""
    pre, suf = common_affixes(base, new)
    ops: list = []

    def copy(a, b):
        if a == b:
            return
        if ops and isinstance(ops[-1], list) and ops[-1][1] == a:
            ops[-1][1] = b
        else:
            ops.append([a, b])

    def insert(text):
        if not text:
            return
        if ops and isinstance(ops[-1], str):
            ops[-1] += text
        else:
            ops.append(text)

    copy(0, pre)
    base_mid, new_mid = base[pre:len(base) - suf], new[pre:len(new) - suf]
    for tag, i1, i2, j1, j2 in budget.opcodes(base_mid, new_mid):
        if tag == "equal":
            copy(pre + i1, pre + i2)
        else:
            insert("".join(new_mid[j1:j2]))
    copy(len(base) - suf, len(base))
    return ops


def delta_apply(base: list[str], ops: list) -> list[str]:
    out: list[str] = []
    for op in ops:
        if isinstance(op, list):
            out.extend(base[op[0]:op[1]])
        else:
            out.extend(split_lines(op))
    return out


def pack_delta(ops: list) -> bytes:
    return zlib.compress(json.dumps(ops, ensure_ascii=False, separators=(",", ":")).encode(), 6)


def unpack_delta(payload: bytes) -> list:
    return json.loads(zlib.decompress(payload))


class _BodyCache:
    """LRU of rebuilt bodies by SHA-256, bounded in total characters
    (PROMPT_BODY_CACHE_BYTES, read when the cache is first used)."""

    def __init__(self):
        self._lru: LRUCache | None = None
        self._lock = threading.Lock()

    def _cache(self) -> LRUCache:
        if self._lru is None:
            self._lru = LRUCache(maxsize=settings.PROMPT_BODY_CACHE_BYTES, getsizeof=len)
        return self._lru

    def get(self, sha: str) -> str | None:
        with self._lock:
            return self._cache().get(sha)

    def put(self, sha: str, text: str) -> None:
        with self._lock:
            cache = self._cache()
            if len(text) > cache.maxsize // 4:
                return  # one huge body must not evict everything else
            cache[sha] = text

    def clear(self) -> None:
        with self._lock:
            self._cache().clear()


body_cache = _BodyCache()


def blob_put(data: bytes) -> Blob:
    """Store bytes content-addressed; the same bytes are stored once."""
    sha = hashlib.sha256(data).hexdigest()
    blob = Blob.objects.filter(sha256=sha).first()
    if blob is None:
        # Object first, row second: a row always means the object exists.
        get_blob_store().put(f"sha256/{sha}", data)
        blob, _ = Blob.objects.get_or_create(sha256=sha, defaults={"size": len(data)})
    return blob


def _place(payload: bytes) -> dict:
    if len(payload) <= settings.PROMPT_INLINE_MAX_BYTES:
        return {"payload_inline": payload, "payload_blob": None}
    return {"payload_inline": None, "payload_blob": blob_put(payload)}


def storage_fields(*, data: bytes, text: str, parent: PromptVersion | None,
                   blob: Blob | None = None) -> dict:
    """Model fields that store this body: a diff against the parent when that
    is allowed (chain shorter than PROMPT_SNAPSHOT_EVERY), found within
    PROMPT_DELTA_TIMEOUT_S and clearly smaller, else a full snapshot. An
    uploaded `blob` already is the snapshot."""
    if blob is not None:
        return {"storage": Storage.FULL, "chain_length": 0, "payload_inline": None, "payload_blob": blob}
    if parent is not None and parent.chain_length + 1 < settings.PROMPT_SNAPSHOT_EVERY and data:
        budget = Budget(settings.PROMPT_DELTA_TIMEOUT_S)
        ops = delta_encode(split_lines(body_text(parent)), split_lines(text), budget)
        payload = None if budget.coarse else pack_delta(ops)
        if payload is not None and len(payload) < settings.PROMPT_DELTA_MAX_RATIO * len(data):
            return {"storage": Storage.DELTA, "chain_length": parent.chain_length + 1, **_place(payload)}
    return {"storage": Storage.FULL, "chain_length": 0, **_place(data)}


def _payload(version: PromptVersion) -> bytes:
    if version.payload_inline is not None:
        return bytes(version.payload_inline)
    return get_blob_store().get(version.payload_blob.key)


class CorruptBody(Exception):
    pass


def body_text(version: PromptVersion) -> str:
    """The exact body of any version: the nearest snapshot (or cached
    ancestor) plus at most PROMPT_SNAPSHOT_EVERY - 1 diffs."""
    cached = body_cache.get(version.body_sha256)
    if cached is not None:
        return cached
    pending: list[PromptVersion] = []
    node = version
    while True:
        cached = body_cache.get(node.body_sha256)
        if cached is not None:
            lines = split_lines(cached)
            break
        if node.storage == Storage.FULL:
            lines = split_lines(_payload(node).decode("utf-8"))
            break
        pending.append(node)
        node = PromptVersion.objects.select_related("payload_blob").get(pk=node.parent_id)
    for step in reversed(pending):
        lines = delta_apply(lines, unpack_delta(_payload(step)))
    text = "".join(lines)
    data = text.encode("utf-8")
    if len(data) != version.body_size or hashlib.sha256(data).hexdigest() != version.body_sha256:
        raise CorruptBody(f"body of version {version.pk} does not match its recorded hash")
    body_cache.put(version.body_sha256, text)
    return text


def body_bytes(version: PromptVersion) -> bytes:
    return body_text(version).encode("utf-8")


def body_range(version: PromptVersion, start: int, end: int) -> bytes:
    """Bytes [start, end) of the body; a stored snapshot is read by range."""
    if version.storage == Storage.FULL and version.payload_blob_id:
        return get_blob_store().get(version.payload_blob.key, (start, end))
    return body_bytes(version)[start:end]


def body_object_key(version: PromptVersion) -> str:
    """A store key holding exactly this body, for a presigned GET. Bodies kept
    inline or as diffs are written to the store (content-addressed) on first use."""
    if version.storage == Storage.FULL and version.payload_blob_id:
        return version.payload_blob.key
    return blob_put(body_bytes(version)).key
