"""The bounded-staleness cache: the SDK's contract, in one small state machine.

For each (prompt, label) the cache holds at most one entry: the last good
version, or the server's last "gone" answer (label removed, prompt not found,
key refused), with the time of the request that produced it.

With age = now - time of that request:

    age < ttl                     serve the cached version ("cache"), or re-raise
                                  the cached "gone" error
    ttl <= age < ttl + max_stale  serve the cached version flagged stale ("stale")
                                  and start one background refresh if none is
                                  running; a "gone" entry is not served stale
    otherwise (or no entry)       fetch now; on a server error or timeout, use
                                  the caller's fallback ("fallback") or raise
                                  ServerUnavailable

A refresh that gets an answer replaces the entry, whatever it held: a moved
label is served from the next call on, and a removed one raises LabelNotFound
from the next call on (the old version is dropped, never served again). A
refresh that fails (5xx, 429, timeout, connection refused) leaves the entry as
it was, so the stale copy keeps being served, but never past the bound.
Answers are ordered by the time their request started: an older answer never
overwrites a newer one.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Hashable
from typing import Generic, Literal, TypeVar

T = TypeVar("T")
Action = Literal["fresh", "stale", "fetch"]


@dataclasses.dataclass
class Entry(Generic[T]):
    at: float  # when the request whose answer this is started (clock seconds)
    value: T | None = None  # the last good version, or None after a "gone" answer
    gone: Exception | None = None  # the server's "gone" answer, re-raised while fresh
    refreshing: bool = False
    failures: int = 0  # refreshes that failed since the last answer


@dataclasses.dataclass(frozen=True)
class Plan(Generic[T]):
    action: Action
    entry: Entry[T] | None
    start_refresh: bool = False  # the caller must run one background refresh


class BoundedStalenessCache(Generic[T]):
    def __init__(self, *, ttl: float, max_stale: float, clock: Callable[[], float]):
        if ttl < 0 or max_stale < 0:
            raise ValueError("ttl and max_stale must be >= 0")
        self.ttl = ttl
        self.max_stale = max_stale
        self.clock = clock
        self._entries: dict[Hashable, Entry[T]] = {}
        self._lock = threading.Lock()

    def plan(self, key: Hashable) -> Plan[T]:
        """What a get of `key` does now (and, for "stale", whether this caller
        is the one that starts the background refresh)."""
        now = self.clock()
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return Plan("fetch", None)
            age = now - entry.at
            if age < self.ttl:
                return Plan("fresh", entry)
            if entry.value is not None and age < self.ttl + self.max_stale:
                start = not entry.refreshing
                entry.refreshing = True
                return Plan("stale", entry, start_refresh=start)
            return Plan("fetch", entry)

    def peek(self, key: Hashable) -> Entry[T] | None:
        with self._lock:
            return self._entries.get(key)

    def answered(self, key: Hashable, *, at: float, value: T | None = None,
                 gone: Exception | None = None, refresh: bool = False) -> None:
        """The server answered a request that started at `at`: a version, or gone."""
        with self._lock:
            entry = self._entries.get(key)
            if refresh and entry is not None:
                entry.refreshing = False
            if entry is not None and entry.at > at:
                return  # a newer answer is already here
            self._entries[key] = Entry(at=at, value=value, gone=gone,
                                       refreshing=entry.refreshing if entry else False)

    def failed(self, key: Hashable, *, refresh: bool = False) -> None:
        """A request got no answer (5xx, 429, timeout, connection error)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                entry.failures += 1
                if refresh:
                    entry.refreshing = False

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
