"""The worker's one libtorrent session, set up for a fleet of hosts that trust the
object store and each other's hashes, not each other's bytes.

What the settings are for (see bench/distribution.py for what was measured):

- Every address is put in libtorrent's global peer class. Peers on loopback or a
  private network otherwise fall in the "local" class, which ignores rate limits,
  and in a datacenter every peer is on a private network.
- ``allow_multiple_connections_per_ip``: several workers share a host (one per
  device), hence an IP address.
- Private: no DHT, local service discovery, UPnP or NAT-PMP, whatever the
  settings say; torrents are private (no peer exchange: libtorrent's ut_pex plugin,
  loaded by default and not removable through the Python bindings' session_params,
  does not attach to a private torrent, and fetch.py refuses any other torrent) and
  SSL: the session listens on SSL sockets only, on the configured interface, and
  every torrent gets this host's credential (inference_protocol.swarm_credentials),
  so a peer without a certificate of the swarm CA fails the TLS handshake.
- TCP only: uTP (LEDBAT) backs off under any other traffic and costs CPU per packet.
- ``ssrf_mitigation`` off: it refuses web seeds on loopback whose URL has a query
  string, i.e. every presigned URL of a local S3 endpoint. Safe here: torrents
  whose info carries web seeds are refused (fetch.py), and the only web seed a
  torrent gets is the URL this worker presigned itself.
- Disk I/O is libtorrent 2.1's pread back end, named explicitly: the mmap back end
  maps whole files, so a worker's resident memory grows to the checkpoint's size;
  with pread, memory is the bounded write queue and read cache set below.
- Choking and requests: see TUNING.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict

import libtorrent as lt

from inference_protocol.swarm_credentials import DH_PARAMS_PEM, SwarmCredential

logger = logging.getLogger(__name__)

# What mattered in bench/distribution.py (16-32 hosts, every link capped alike):
# - above all, which pieces each host asks the origin for: see origin_share.py;
# - rarest first from the first piece (initial_picker_threshold 0): libtorrent
#   otherwise picks its first 4 pieces at random, priorities ignored, and every
#   host's first web-seed request (1 MiB or more) went to a random place;
# - unchoke every interested peer: with the default 8 upload slots and a 15 s
#   rotation, a host starved for pieces waits for a slot instead of pulling from
#   whoever has them; a fleet has no free riders to punish, so choke nobody;
# - seeds serve round robin, not the fastest peers, so no downloader is left behind;
# - requests kept at libtorrent's default depth, and a finer rate-limit tick:
#   libtorrent asks the rate limiter for all of a peer's outstanding bytes at once,
#   so with 1,500 requests queued a capped link went stop-and-go;
# - not urlseed_max_request_bytes (a web seed request is at least 1 MiB whatever
#   it says) nor urlseed_pipeline_size (unused in libtorrent 2.1);
# - connections are kept when both ends look done: a host whose origin share
#   leaves some pieces unwanted for a moment (origin_share.py) still needs them;
# - the piece size (inference_client.checkpoints.torrents);
# - a web seed retried a second after a failed connection (libtorrent waits 30 s);
#   one that answered an HTTP error libtorrent never asks again: see origin_share.py.
TUNING = {
    "initial_picker_threshold": 0,
    "choking_algorithm": lt.choking_algorithm_t.fixed_slots_choker,
    "unchoke_slots_limit": -1,
    "seed_choking_algorithm": lt.seed_choking_algorithm_t.round_robin,
    "unchoke_interval": 5,
    "tick_interval": 100,
    "connections_limit": 500,
    "connection_speed": 100,
    "torrent_connect_boost": 30,
    "min_reconnect_time": 1,
    "peer_connect_timeout": 5,
    "urlseed_wait_retry": 1,
    "close_redundant_connections": False,
}

ALERTS = (lt.alert_category.error | lt.alert_category.status | lt.alert_category.peer
          | lt.alert_category.storage)


def ssl_listen(listen: str) -> str:
    """``listen`` (libtorrent's listen_interfaces) with every socket an SSL one."""
    return ",".join(part if part.endswith("s") else f"{part}s" for part in
                    (p.strip() for p in listen.split(",")) if part)


def session_settings(*, listen: str, upload_rate: int, download_rate: int) -> dict:
    return {
        "listen_interfaces": ssl_listen(listen),
        "enable_dht": False, "enable_lsd": False, "enable_upnp": False, "enable_natpmp": False,
        "enable_outgoing_utp": False, "enable_incoming_utp": False,
        "allow_multiple_connections_per_ip": True,
        "ssrf_mitigation": False,
        "upload_rate_limit": upload_rate, "download_rate_limit": download_rate,
        "max_queued_disk_bytes": 16 * 1024 * 1024,
        "cache_size": 1024,  # 16 KiB blocks: 16 MiB of read cache
        "alert_mask": ALERTS,
        "alert_queue_size": 10000,
        **TUNING,
    }


class TorrentEvents:
    """What the alerts said about one torrent since it was added."""

    def __init__(self):
        self.hash_failures = 0
        self.failed_pieces: set[int] = set()  # pieces that failed their hash check at least once
        self.banned: set[str] = set()
        self.web_seed_error: str | None = None
        self.web_seed_failures = 0
        self.error: str | None = None
        self.resume_data: bytes | None = None
        self.removed = threading.Event()
        self.resume_saved = threading.Event()


class SwarmSession:
    """A libtorrent session and the thread that reads its alerts."""

    def __init__(self, *, listen: str, credential: SwarmCredential, upload_rate: int = 0,
                 download_rate: int = 0):
        self.credential = credential
        params = lt.session_params()
        params.settings = session_settings(  # type: ignore[assignment]  # stub: a dict is taken too
            listen=listen, upload_rate=upload_rate, download_rate=download_rate)
        params.disk_io_constructor = "pread_disk_io_constructor"
        self.session = lt.session(params)
        everyone = lt.ip_filter()
        global_class = 1 << lt.session.global_peer_class_id
        everyone.add_rule("0.0.0.0", "255.255.255.255", global_class)
        everyone.add_rule("::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", global_class)
        self.session.set_peer_class_filter(everyone)
        self._events: dict[str, TorrentEvents] = defaultdict(TorrentEvents)
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._read_alerts, name="swarm-alerts", daemon=True)
        self._thread.start()

    @property
    def listen_port(self) -> int:
        return self.session.ssl_listen_port()

    def events(self, handle) -> TorrentEvents:
        with self._lock:
            return self._events[_key(handle)]

    def add(self, params: lt.add_torrent_params):
        """Add a torrent, started only once it holds this host's credential."""
        start = not params.flags & lt.torrent_flags.paused
        params.flags |= lt.torrent_flags.paused
        handle = self.session.add_torrent(params)
        handle.set_ssl_certificate_buffer(self.credential.cert_pem, self.credential.key_pem, DH_PARAMS_PEM)
        if start:
            handle.resume()
        with self._lock:  # a torrent added again (seeding after its download) keeps its history
            old, new = self._events.get(_key(handle)), TorrentEvents()
            if old is not None:
                new.hash_failures, new.banned = old.hash_failures, old.banned
            self._events[_key(handle)] = new
        return handle

    def remove(self, handle, timeout: float = 30) -> None:
        events = self.events(handle)
        self.session.remove_torrent(handle)
        if not events.removed.wait(timeout):
            logger.warning("torrent %s not removed within %ss", _key(handle), timeout)

    def save_resume(self, handle, timeout: float = 10, *, flush: bool = False) -> bytes | None:
        """The torrent's resume data now (pieces held, peers known), or None.
        ``flush``: once the torrent's blocks still queued for the disk are written."""
        events = self.events(handle)
        events.resume_saved.clear()
        flags = lt.torrent_handle.save_info_dict | (lt.torrent_handle.flush_disk_cache if flush else 0)
        handle.save_resume_data(flags)
        return events.resume_data if events.resume_saved.wait(timeout) else None

    def close(self) -> None:
        self._closed.set()
        self.session.pause()
        self._thread.join(5)
        del self.session

    def _read_alerts(self):
        while not self._closed.is_set():
            self.session.wait_for_alert(250)
            for alert in self.session.pop_alerts():
                try:
                    self._on_alert(alert)
                except Exception:  # one odd alert must not stop the reader
                    logger.exception("swarm alert %s", type(alert).__name__)

    def _on_alert(self, alert):
        handle = getattr(alert, "handle", None)
        if handle is None or not handle.is_valid() and not isinstance(alert, lt.torrent_removed_alert):
            return
        key = str(alert.info_hashes.v2) if isinstance(alert, lt.torrent_removed_alert) else _key(handle)
        with self._lock:
            events = self._events[key]
        if isinstance(alert, lt.hash_failed_alert):
            events.hash_failures += 1
            events.failed_pieces.add(int(alert.piece_index))
        elif isinstance(alert, lt.peer_ban_alert):
            events.banned.add(f"{alert.endpoint[0]}:{alert.endpoint[1]}")
            logger.warning("banned peer %s:%s (sent data failing its hash)", *alert.endpoint)
        elif isinstance(alert, lt.url_seed_alert):
            events.web_seed_error = alert.error_message() or alert.message()
            events.web_seed_failures += 1
        elif isinstance(alert, lt.torrent_error_alert | lt.file_error_alert):
            events.error = alert.message()
        elif isinstance(alert, lt.save_resume_data_alert):
            events.resume_data = lt.write_resume_data_buf(alert.params)
            events.resume_saved.set()
        elif isinstance(alert, lt.save_resume_data_failed_alert):
            events.resume_data = None
            events.resume_saved.set()
        elif isinstance(alert, lt.torrent_removed_alert):
            events.removed.set()


def _key(handle) -> str:
    return str(handle.info_hashes().v2)
