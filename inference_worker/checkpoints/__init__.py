"""Model checkpoints on a worker: fetched through a swarm of workers, verified,
cached, and seeded to the others for as long as the process lives.

    path = checkpoints.ensure(model="smollm2", version="v1")   # blocks until verified

One CheckpointManager per process owns the libtorrent session (session.py), the
fetches (fetch.py), the cache (cache.py), and a discovery thread that reads peer
addresses from the other workers' heartbeats in Redis while a fetch runs. The swarm
is private (no DHT, peer exchange or local discovery): if Redis goes away, the
connections already made carry the transfer on.

The session listens on SWARM_LISTEN, by default on the address this host
advertises, and admits only peers holding a credential of the swarm CA
(inference_protocol.swarm_credentials): this worker's is SWARM_CERT_FILE and
SWARM_KEY_FILE, or one it issues itself where it holds CONFIG_SIGNING_KEY.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlparse

from django.conf import settings

from core import redis as core_redis
from core.blobstore import get_blob_store
from inference_protocol.heartbeat import DOWNLOADING, PRESENT, publish, swarm_peers
from inference_protocol.swarm_credentials import SwarmCredential, issue_credential
from inference_worker.identity import WORKER_ID

from .cache import CheckpointCache
from .checks import FetchError
from .fetch import CheckpointFetch
from .session import SwarmSession

logger = logging.getLogger(__name__)

__all__ = ["CheckpointManager", "FetchError", "ensure", "get_manager", "node_record", "start_manager"]


class CheckpointManager:
    def __init__(self, *, cache_dir: Path | str | None = None, listen: str | None = None,
                 web_seed: bool = True, discovery: bool | None = None,
                 peers: Iterable[tuple[str, int]] = ()):
        self.cache = CheckpointCache(cache_dir or settings.MODEL_CACHE_DIR,
                                     public_key=settings.CONFIG_PUBLIC_KEY)
        host = _advertised_host()
        self.swarm = SwarmSession(
            listen=listen or settings.SWARM_LISTEN or f"{_listen_host(host)}:0", credential=_credential(),
            upload_rate=settings.SWARM_UPLOAD_RATE_LIMIT, download_rate=settings.SWARM_DOWNLOAD_RATE_LIMIT)
        self.web_seed = web_seed
        self.store = get_blob_store()  # made once: a boto3 client costs ~0.5 s of CPU
        self.discovery = core_redis.enabled() if discovery is None else discovery
        self.static_peers = list(peers)  # given by hand (model_fetch --peer)
        self.address = f"{host}:{self.swarm.listen_port}"
        self.fetches: dict[str, CheckpointFetch] = {}
        self._lock = threading.Lock()
        self._label_locks: dict[str, threading.Lock] = {}
        self._closed = threading.Event()
        self._redis_down = False
        self._members_seen: dict[str, list[str]] = {}  # label -> swarm addresses of the hosts that list it
        threading.Thread(target=self._discover, name="swarm-discovery", daemon=True).start()

    def ensure(self, *, model: str, version: str) -> Path:
        """The verified local directory of model@version, fetching it if need be
        (FetchError otherwise). Concurrent callers for one version share one fetch."""
        label = f"{model}@{version}"
        with self._lock:
            label_lock = self._label_locks.setdefault(label, threading.Lock())
        with label_lock:
            current = self.fetches.get(label)
            if current is not None and current.status.state == PRESENT and current.path is not None:
                return current.path
            fetch = CheckpointFetch(
                swarm=self.swarm, store=self.store, cache=self.cache, model=model, version=version,
                web_seed=self.web_seed, stall_s=settings.MODEL_FETCH_STALL_S,
                web_seed_expires=settings.MODEL_WEB_SEED_EXPIRES,
                peers_known=lambda: bool(self._peers(label)),
                members=lambda fresh=False: self._members(label, fresh=fresh),
                origin_fallback_s=settings.MODEL_ORIGIN_FALLBACK_S,
                origin_start_at=time.monotonic() + (settings.SWARM_PEERS_REFRESH_S if self.discovery else 0))
            with self._lock:
                self.fetches[label] = fetch
            if self.discovery:
                self._announce()
                self._peers(label)
            return fetch.run()

    def node_record(self) -> dict:
        return {"worker": WORKER_ID, "at": time.time(), "swarm": self.address,
                "checkpoints": {label: f.status.record() for label, f in list(self.fetches.items())}}

    def close(self) -> None:
        self._closed.set()
        for fetch in list(self.fetches.values()):
            fetch.stop()
        self.swarm.close()

    def _peers(self, label: str) -> list[tuple[str, int]]:
        if not self.discovery:
            return self.static_peers
        try:
            peers = swarm_peers(label, exclude=WORKER_ID)
        except Exception as exc:  # Redis down: the swarm goes on with what it knows
            if not self._redis_down:
                logger.warning("cannot read peers from Redis (%s); keeping the peers connected already", exc)
            self._redis_down = True
            return self.static_peers
        if self._redis_down:
            logger.info("Redis is back: reading peers from heartbeats again")
        self._redis_down = False
        found = [p for p in peers if f"{p[0]}:{p[1]}" != self.address]
        self._members_seen[label] = [f"{host}:{port}" for host, port in found]
        return self.static_peers + found

    def _announce(self) -> None:
        """Publish this node's record now, not at the next heartbeat, so that hosts
        starting a fetch together see each other before they split the origin."""
        try:
            publish([], self.node_record())
        except Exception as exc:
            logger.warning("cannot publish this node's record to Redis (%s)", exc)

    def _members(self, label: str, *, fresh: bool = False) -> tuple[int, int]:
        """This host's rank among the hosts that fetch or have ``label``, as last read
        from the heartbeats (Redis going away freezes it), banned peers left out, and
        how many there are. Hosts that finished stay members, so the ranges of the
        others do not move when they do (their own range is available from them)."""
        if fresh and self.discovery:
            self._peers(label)
        fetch = self.fetches.get(label)
        banned = fetch.banned() if fetch is not None else set()
        members = sorted({*self._members_seen.get(label, ()), self.address} - banned)
        return members.index(self.address), len(members)

    def _discover(self):
        while not self._closed.wait(settings.SWARM_PEERS_REFRESH_S):
            for label, fetch in list(self.fetches.items()):
                if fetch.status.state == DOWNLOADING:
                    for host, port in self._peers(label):
                        fetch.connect(host, port)


def _credential() -> SwarmCredential:
    if settings.SWARM_CERT_FILE or settings.SWARM_KEY_FILE:
        try:
            return SwarmCredential.from_files(settings.SWARM_CERT_FILE, settings.SWARM_KEY_FILE)
        except OSError as exc:
            raise FetchError("swarm_credential_missing", "cannot read the swarm credential "
                             f"(SWARM_CERT_FILE, SWARM_KEY_FILE): {exc}") from None
    if settings.CONFIG_SIGNING_KEY:
        return issue_credential(settings.CONFIG_SIGNING_KEY, WORKER_ID, days=settings.SWARM_CREDENTIAL_DAYS)
    raise FetchError("swarm_credential_missing",
                     "this worker has no swarm credential: set SWARM_CERT_FILE and SWARM_KEY_FILE to the "
                     "files that `manage.py swarm_credential` writes on the control plane")


def _listen_host(host: str) -> str:
    """The advertised host as a libtorrent listen address (an IP, IPv6 in brackets)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = ipaddress.ip_address(socket.gethostbyname(host))
    return f"[{address}]" if address.version == 6 else str(address)


def _advertised_host() -> str:
    """SWARM_ADVERTISE_HOST, else this host's address on the route to Redis (the
    network the workers share), else its name's address."""
    if settings.SWARM_ADVERTISE_HOST:
        return settings.SWARM_ADVERTISE_HOST
    if settings.REDIS_URL:
        parsed = urlparse(settings.REDIS_URL)
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
                probe.connect((parsed.hostname or "127.0.0.1", parsed.port or 6379))  # no packet is sent
                return probe.getsockname()[0]
        except OSError:
            pass
    return socket.gethostbyname(socket.gethostname())


_manager: CheckpointManager | None = None
_manager_lock = threading.Lock()


def start_manager(**options) -> CheckpointManager:
    """Create this process's manager with options (model_fetch does); once only."""
    global _manager
    with _manager_lock:
        if _manager is not None:
            raise RuntimeError("the checkpoint manager of this process is already running")
        _manager = CheckpointManager(**options)
        return _manager


def get_manager() -> CheckpointManager:
    global _manager
    with _manager_lock:
        if _manager is None:
            _manager = CheckpointManager()
        return _manager


def ensure(*, model: str, version: str) -> Path:
    return get_manager().ensure(model=model, version=version)


def node_record() -> dict | None:
    """This process's node record for the heartbeat, None before any checkpoint is asked for."""
    return _manager.node_record() if _manager is not None else None
