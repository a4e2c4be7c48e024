"""The config floor: the newest document a process has applied (its number and
content digest), kept where a restart finds it. A restarted process starts on
document 0, so without it any older document that is still validly signed (a
replay into Redis, a Redis restored from a backup) would be applied again.

After a restart a document below the floor is refused, and one with the floor's
number only if its digest is the floor's (the same document, applied again).
Stores: a file (CONFIG_FLOOR_FILE, one per node: what Redis cannot change),
a Redis key shared by the namespace's processes, and on the control plane the
database of published documents (inference_client.control.documents).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

if TYPE_CHECKING:
    from redis import Redis

logger = logging.getLogger("inference.config")


@dataclasses.dataclass(frozen=True)
class Floor:
    number: int
    digest: str


class FloorStore(Protocol):
    def read(self) -> Floor | None: ...

    def raise_to(self, floor: Floor) -> None: ...


def _parse(raw: bytes | str | None) -> Floor | None:
    if not raw:
        return None
    data = json.loads(raw)
    return Floor(number=int(data["number"]), digest=str(data["digest"]))


def _dump(floor: Floor) -> str:
    return json.dumps(dataclasses.asdict(floor), sort_keys=True)


class FileFloor:
    """One JSON file, replaced atomically (a crash leaves the old floor or the new)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def read(self) -> Floor | None:
        try:
            return _parse(self.path.read_text())
        except FileNotFoundError:
            return None

    def raise_to(self, floor: Floor) -> None:
        current = self.read()
        if current is not None and current.number >= floor.number:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".config-floor-")
        with os.fdopen(fd, "w") as fh:
            fh.write(_dump(floor))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)


# Raise only: a slower process never lowers the floor another one set.
_RAISE = ("local cur = redis.call('GET', KEYS[1]) "
          "if cur and cjson.decode(cur)['number'] >= tonumber(ARGV[2]) then return 0 end "
          "redis.call('SET', KEYS[1], ARGV[1]) return 1")


class RedisFloor:
    def __init__(self, redis_factory: Callable[[], Redis], key: str):
        self.redis_factory, self.key = redis_factory, key

    def read(self) -> Floor | None:
        return _parse(cast(bytes | None, self.redis_factory().get(self.key)))  # a sync client's reply

    def raise_to(self, floor: Floor) -> None:
        self.redis_factory().eval(_RAISE, 1, self.key, _dump(floor), floor.number)  # type: ignore[arg-type]  # stub: not only str


def read_floor(stores: list[FloorStore]) -> Floor | None:
    """The highest floor of all stores. An unreadable store raises: the caller
    refuses documents until it can read it (never applies below an unknown floor)."""
    floors = [f for f in (store.read() for store in stores) if f is not None]
    return max(floors, key=lambda f: f.number, default=None)


def raise_floor(stores: list[FloorStore], floor: Floor) -> None:
    for store in stores:
        try:
            store.raise_to(floor)
        except Exception as exc:  # the document stays applied; the next one raises it again
            logger.warning("config floor %s not kept in %s: %s", floor.number, type(store).__name__, exc)


# ---- this process's stores ------------------------------------------------------

_extra_stores: list[FloorStore] = []


def add_floor_store(store: FloorStore) -> None:
    """One more store this process's floor is read from (the control plane's database)."""
    _extra_stores.append(store)


def floor_key(namespace: str | None = None) -> str:
    """The Redis key of the namespace's floor, ``<CONFIG_NAMESPACE>:floor``."""
    from django.conf import settings

    return f"{namespace or settings.CONFIG_NAMESPACE}:floor"


def process_floor_stores() -> list[FloorStore]:
    """Read at each use: settings (a test's namespace) may change."""
    from django.conf import settings

    stores = list(_extra_stores)
    if settings.CONFIG_FLOOR_FILE:
        stores.append(FileFloor(settings.CONFIG_FLOOR_FILE))
    if settings.REDIS_URL:
        from core.redis import get_redis

        stores.append(RedisFloor(get_redis, floor_key()))
    return stores
