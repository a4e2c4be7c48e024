"""Structured diff of two JSON values (a version's tools, its response schema,
a message's tool calls) as RFC 6902 operations: add, remove and replace at
JSON-pointer (RFC 6901) paths, each remove and replace also carrying the
value it drops as "old" (a member JSON Patch ignores).

Applied in order to the old value, the operations give the new one. Lists are
aligned by sequence matching (an item inserted at the front is one add, not a
replace of every item), under the diff's deadline (playground.matching). Every
subtree is fingerprinted once (a BLAKE2 digest of its children's), so equal
subtrees are skipped without comparing them again: linear time.

Bounded by `JsonLimits`, which the diffs of one answer share: at most
`max_ops` operations (then `truncated`), their values at most `max_chars`
characters of JSON in all (a larger value is left out: the operation says
`"<name>_elided": <its size>` and the diff is `truncated`); below `max_depth`
a changed subtree is replaced whole. A truncated diff is not a patch to
apply, only a description.
"""

from __future__ import annotations

import hashlib
import json

from .matching import Budget


class _Full(Exception):
    """The operation limit is reached."""


class JsonLimits:
    """What the JSON diffs of one answer may still hold."""

    def __init__(self, max_ops: int, max_chars: int):
        self.ops_left, self.chars_left = max_ops, max_chars


def _pointer(path: str, key) -> str:
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"


class _Differ:
    def __init__(self, budget: Budget, limits: JsonLimits, max_depth: int):
        self.budget, self.limits, self.max_depth = budget, limits, max_depth
        self.ops: list[dict] = []
        self.truncated = False
        self.digests: dict[int, bytes] = {}  # id(container) -> digest; the values outlive the diff

    def digest(self, value) -> bytes:
        if not isinstance(value, dict | list):
            # Type-tagged, so true, 1 and 1.0 differ as they do in JSON.
            return hashlib.blake2b(f"{type(value).__name__}:{json.dumps(value)}".encode(),
                                   digest_size=16).digest()
        known = self.digests.get(id(value))
        if known is None:
            h = hashlib.blake2b(digest_size=16)
            if isinstance(value, dict):
                h.update(b"{")
                for key in sorted(value):
                    h.update(json.dumps(key).encode() + b":" + self.digest(value[key]))
            else:
                h.update(b"[")
                for item in value:
                    h.update(self.digest(item))
            known = self.digests[id(value)] = h.digest()
        return known

    def emit(self, op: str, path: str, **values) -> None:
        if self.limits.ops_left <= 0:
            raise _Full
        self.limits.ops_left -= 1
        entry: dict = {"op": op, "path": path}
        for name, value in values.items():
            size = len(json.dumps(value, ensure_ascii=False))
            if size > self.limits.chars_left:
                entry[f"{name}_elided"] = size
                self.truncated = True
            else:
                self.limits.chars_left -= size
                entry[name] = value
        self.ops.append(entry)

    def walk(self, old, new, path: str, depth: int) -> None:
        if self.digest(old) == self.digest(new):
            return
        if depth < self.max_depth and isinstance(old, dict) and isinstance(new, dict):
            for key, value in old.items():
                if key not in new:
                    self.emit("remove", _pointer(path, key), old=value)
                else:
                    self.walk(value, new[key], _pointer(path, key), depth + 1)
            for key, value in new.items():
                if key not in old:
                    self.emit("add", _pointer(path, key), value=value)
        elif depth < self.max_depth and isinstance(old, list) and isinstance(new, list):
            self.walk_list(old, new, path, depth)
        else:
            self.emit("replace", path, old=old, value=new)

    def walk_list(self, old: list, new: list, path: str, depth: int) -> None:
        # Indices are those of the list as patched so far: before position j it already is `new`.
        opcodes = self.budget.opcodes([self.digest(x) for x in old], [self.digest(x) for x in new])
        for tag, i1, i2, j1, j2 in opcodes:
            paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
            for t in range(paired):
                self.walk(old[i1 + t], new[j1 + t], _pointer(path, j1 + t), depth + 1)
            if tag != "equal":
                for value in old[i1 + paired:i2]:
                    self.emit("remove", _pointer(path, j1 + paired), old=value)
                for j in range(j1 + paired, j2):
                    self.emit("add", _pointer(path, j), value=new[j])


def json_diff(old, new, *, budget: Budget, limits: JsonLimits, max_depth: int = 16) -> dict:
    """{"changed", "ops", "truncated"} from `old` to `new` (JSON values)."""
    differ = _Differ(budget, limits, max_depth)
    try:
        differ.walk(old, new, "", 0)
    except _Full:
        differ.truncated = True
    return {"changed": differ.digest(old) != differ.digest(new), "ops": differ.ops,
            "truncated": differ.truncated}
