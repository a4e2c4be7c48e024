"""Config documents: what the control plane publishes and every gateway and
worker applies, without a restart.

A document is numbered, immutable once published, names its parent's number,
and is signed with Ed25519 by the control plane (the private key lives only
there: settings.CONFIG_SIGNING_KEY); every node holds the public key
(settings.CONFIG_PUBLIC_KEY) and verifies before it applies. The signed bytes
are the canonical JSON of everything but the signature (``signed_bytes``).

Content (every section always present; see ``check_content``):

    {"models": {"smollm2": {"engine": "llamacpp", "scheduler": {...},
                            "versions": {"v1": 90, "v2": 10}}},     # optional: weights, sum 100
     "rate_limits": {"free": {"requests_per_min": 60, "tokens_per_min": 40000}, "paid": {...}},
     "capacity": {"yellow_ratio": 0.75, ...},                       # CAPACITY_KEYS
     "rollout": {"window_s": 30, ...}}                              # ROLLOUT_KEYS

Document 0 is the bootstrap: the environment variables (settings), unsigned,
what a process runs on until it receives a signed document.

Pickup (``ConfigWatcher``): the control plane SETs the newest document under
``latest_key()`` and PUBLISHes it on ``channel()``; each process subscribes, and
also GETs the key every CONFIG_POLL_S, so a lost pub/sub message (or a subscriber that
was reconnecting) costs one poll period at most.

Apply: ``offer(raw)`` verifies (signature, number above the current one and not
below the persisted floor, see inference_protocol.config_floor; content valid) and
then swaps one immutable ConfigSnapshot in by a single assignment.
Readers call ``current()`` once per request and use that object throughout, so a
request sees the old config or the new one, never a mix; reading it is one
global load (no lock, no query, no round trip). A refused document leaves the
current one in place and logs why (``last_refusal`` keeps the reason too).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from django.conf import LazySettings
from django.test.signals import setting_changed

from core.canonical import canonical_json
from inference_protocol.config_document import (
    CAPACITY_KEYS,
    ROLLOUT_KEYS,
    ConfigDocument,
    ConfigError,
    check_content,
    version_weight,
)
from inference_protocol.config_floor import Floor, FloorStore, process_floor_stores, raise_floor, read_floor

if TYPE_CHECKING:
    import redis

logger = logging.getLogger("inference.config")

def latest_key(namespace: str | None = None) -> str:
    """Where the newest document is kept, ``<CONFIG_NAMESPACE>:latest``."""
    return f"{namespace or _settings().CONFIG_NAMESPACE}:latest"


def channel(namespace: str | None = None) -> str:
    """The pub/sub channel of new documents, ``<CONFIG_NAMESPACE>:published``."""
    return f"{namespace or _settings().CONFIG_NAMESPACE}:published"


# ---- the snapshot every request reads --------------------------------------------

@dataclasses.dataclass(frozen=True)
class ConfigSnapshot:
    """One applied document. Never mutated: a new document is a new snapshot.
    (Its dicts are private copies; callers must not change them.)"""

    number: int
    parent: int | None
    models: dict[str, Any]          # model -> engine spec (with "versions", if the document has them)
    rate_limits: dict[str, Any]     # tier -> {requests_per_min, tokens_per_min}
    capacity: dict[str, Any]        # CAPACITY_KEYS
    rollout: dict[str, Any]         # ROLLOUT_KEYS
    content: dict[str, Any]         # the whole content (pages, diffs, rollback)
    digest: str           # SHA-256 of the canonical content
    applied_at: float

    @classmethod
    def of(cls, number: int, parent: int | None, content: dict[str, Any]) -> ConfigSnapshot:
        content = copy.deepcopy(content)
        return cls(number=number, parent=parent, models=content["models"],
                   rate_limits=content["rate_limits"], capacity=content["capacity"],
                   rollout=content["rollout"], content=content,
                   digest=hashlib.sha256(canonical_json(content)).hexdigest(), applied_at=time.time())

    def versions(self, model: str) -> dict[str, int]:
        """version -> weight for ``model`` ({} when the document pins none)."""
        spec = self.models.get(model) or {}
        return {v: version_weight(e) for v, e in (spec.get("versions") or {}).items()}


def bootstrap_content(settings: LazySettings) -> dict[str, Any]:
    """Document 0: the environment variables, as the settings modules read them."""
    return copy.deepcopy({
        "models": settings.INFERENCE_MODELS,
        "rate_limits": settings.RATE_LIMITS,
        "capacity": {key: getattr(settings, f"CAPACITY_{key.upper()}") for key in CAPACITY_KEYS},
        "rollout": {key: getattr(settings, f"ROLLOUT_{key.upper()}") for key in ROLLOUT_KEYS},
    })


class ConfigState:
    """This process's current document, and the one place that changes it."""

    def __init__(self, bootstrap: Callable[[], dict[str, Any]], public_key: Callable[[], str | None],
                 floor_stores: Callable[[], list[FloorStore]] = list):
        self._bootstrap = bootstrap
        self._public_key = public_key
        self._floor_stores = floor_stores
        self._floor: Floor | None = None  # read from the stores at the first offer after a (re)start
        self._floor_read = False
        self._lock = threading.Lock()   # writers only; readers never take it
        self.snapshot: ConfigSnapshot = ConfigSnapshot.of(0, None, bootstrap())
        self.last_refusal: str | None = None
        self.listeners: list[Callable[[ConfigSnapshot, ConfigSnapshot], None]] = []

    def reset(self) -> None:
        """Back to document 0, rebuilt from the settings (tests; settings changes)."""
        with self._lock:
            self.snapshot = ConfigSnapshot.of(0, None, self._bootstrap())
            self.last_refusal = None
            self._floor, self._floor_read = None, False

    def offer(self, raw: bytes | str | ConfigDocument) -> bool:
        """Verify and apply; False (and a logged reason) if refused, or if it is
        the document already applied."""
        try:
            doc = raw if isinstance(raw, ConfigDocument) else ConfigDocument.from_json(raw)
        except ConfigError as exc:
            return self._refuse(f"malformed: {exc}")
        current = self.snapshot
        if doc.number == current.number and doc.number > 0:
            return False  # the poll sees the applied document again: nothing to say
        public = self._public_key()
        if not public:
            return self._refuse(f"document {doc.number}: this node has no CONFIG_PUBLIC_KEY")
        try:
            doc.verify(public)
        except ConfigError as exc:
            return self._refuse(str(exc))
        if doc.number < current.number:
            return self._refuse(f"document {doc.number} is older than the applied {current.number}")
        below = self._below_floor(doc)
        if below:
            return self._refuse(below)
        problems = check_content(doc.content)
        if problems:
            return self._refuse(f"document {doc.number} is invalid: {'; '.join(problems)}")
        with self._lock:
            old = self.snapshot
            if doc.number <= old.number:
                return False  # another thread applied it (or a newer one) meanwhile
            new = ConfigSnapshot.of(doc.number, doc.parent, doc.content)
            self.snapshot = new  # the one assignment readers see
            self.last_refusal = None
            self._floor = Floor(new.number, new.digest)
            raise_floor(self._floor_stores(), self._floor)
        logger.info("config document %s applied (parent %s, %s)", doc.number, doc.parent, new.digest[:12])
        for listener in list(self.listeners):
            try:
                listener(old, new)
            except Exception:
                logger.exception("config listener failed on document %s", doc.number)
        return True

    def _below_floor(self, doc: ConfigDocument) -> str | None:
        """Why ``doc`` is refused by the floor (the newest document applied before a
        restart), or None."""
        if not self._floor_read:
            try:
                self._floor = read_floor(self._floor_stores())
            except Exception as exc:  # refused until it can be read (the next poll tries again)
                return f"document {doc.number}: the config floor cannot be read ({exc})"
            self._floor_read = True
        floor = self._floor
        if floor is None or doc.number > floor.number:
            return None
        if doc.number < floor.number:
            return f"document {doc.number} is older than the floor {floor.number} (applied before)"
        if hashlib.sha256(canonical_json(doc.content)).hexdigest() != floor.digest:
            return f"document {doc.number} is not the document {floor.number} applied before"
        return None

    def _refuse(self, reason: str) -> bool:
        self.last_refusal = reason
        logger.warning("config document refused: %s", reason)
        return False


class ConfigWatcher(threading.Thread):
    """Pub/sub subscriber with a poll as the fallback (module docstring)."""

    def __init__(self, state: ConfigState, redis_factory: Callable[[], redis.Redis], *, poll_s: float,
                 pubsub: bool = True, namespace: str | None = None):
        super().__init__(name="config-watcher", daemon=True)
        self.latest_key, self.channel = latest_key(namespace), channel(namespace)
        self.state, self.redis_factory, self.poll_s, self.use_pubsub = state, redis_factory, poll_s, pubsub
        self._stop_event = threading.Event()

    def poll_once(self, client: redis.Redis) -> None:
        raw = cast(bytes | None, client.get(self.latest_key))  # a sync client's reply
        if raw:
            self.state.offer(raw)

    def run(self) -> None:
        while not self._stop_event.is_set():
            pubsub = None
            try:
                client = self.redis_factory()
                if self.use_pubsub:
                    pubsub = client.pubsub(ignore_subscribe_messages=True)
                    pubsub.subscribe(self.channel)
                self.poll_once(client)  # anything published while not subscribed
                next_poll = time.monotonic() + self.poll_s
                while not self._stop_event.is_set():
                    wait = max(0.0, next_poll - time.monotonic())
                    message = pubsub.get_message(timeout=wait) if pubsub else self._stop_event.wait(wait)
                    if isinstance(message, dict) and message.get("type") == "message":
                        self.state.offer(message["data"])
                    if time.monotonic() >= next_poll:
                        self.poll_once(client)
                        next_poll = time.monotonic() + self.poll_s
            except Exception as exc:  # Redis away: keep the current document, retry
                logger.warning("config watcher: %s; retrying", exc)
                self._stop_event.wait(min(self.poll_s, 1.0))
            finally:
                if pubsub is not None:
                    try:
                        pubsub.close()
                    except Exception:
                        pass

    def stop(self) -> None:
        self._stop_event.set()


def broadcast(client: redis.Redis, doc: ConfigDocument, namespace: str | None = None) -> None:
    """The control plane's send: newest document under latest_key() (for polls
    and late joiners), then on channel(). Never replaces a newer document."""
    raw = doc.to_json()
    client.eval("local cur = redis.call('GET', KEYS[1]) "
                "if cur and cjson.decode(cur)['number'] >= tonumber(ARGV[2]) then return 0 end "
                "redis.call('SET', KEYS[1], ARGV[1]) redis.call('PUBLISH', KEYS[2], ARGV[1]) return 1",
                2, latest_key(namespace), channel(namespace), raw, doc.number)  # type: ignore[arg-type]  # stub: not only str


# ---- this process ---------------------------------------------------------------

_state: ConfigState | None = None
_watcher: ConfigWatcher | _NoWatcher | None = None
_start_lock = threading.RLock()


def _settings() -> LazySettings:
    from django.conf import settings

    return settings


def _public_key() -> str | None:
    return _settings().CONFIG_PUBLIC_KEY or None


def state() -> ConfigState:
    global _state
    if _state is None:
        with _start_lock:
            if _state is None:
                _state = ConfigState(lambda: bootstrap_content(_settings()), _public_key,
                                     process_floor_stores)
    return _state


def current() -> ConfigSnapshot:
    """The config this request runs on: read it once, use that object throughout."""
    if _watcher is None:
        start_watcher()
    return (_state or state()).snapshot


def start_watcher() -> ConfigWatcher | None:
    """Start this process's watcher (once), after one synchronous poll so a
    process starts on the newest document. None without Redis (embedded default:
    the control plane applies its documents in-process)."""
    global _watcher
    if _watcher is not None:
        return _watcher if isinstance(_watcher, ConfigWatcher) else None
    with _start_lock:
        if _watcher is not None:
            return _watcher if isinstance(_watcher, ConfigWatcher) else None
        s = _settings()
        if not s.REDIS_URL:
            _watcher = _NoWatcher()
            return None
        from core.redis import get_redis

        cfg = state()
        watcher = ConfigWatcher(cfg, get_redis, poll_s=s.CONFIG_POLL_S, pubsub=s.CONFIG_PUBSUB)
        try:
            watcher.poll_once(get_redis())
        except Exception as exc:
            logger.warning("config: no document from Redis at start (%s); running on %s",
                           exc, cfg.snapshot.number)
        watcher.start()
        _watcher = watcher
        return watcher


def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    # Tests override settings: a process still on document 0 follows them.
    if _state is not None and _state.snapshot.number == 0 and (
            setting in ("INFERENCE_MODELS", "RATE_LIMITS")
            or setting.startswith(("CAPACITY_", "ROLLOUT_"))):
        _state.reset()


setting_changed.connect(_settings_changed)


class _NoWatcher:
    def stop(self) -> None:
        pass
