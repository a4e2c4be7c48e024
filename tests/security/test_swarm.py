"""M5: the checkpoint swarm is private.

- a worker listens on its own (advertised) address, not every interface, with no
  DHT, local discovery, UPnP or NAT-PMP socket;
- torrents are private SSL torrents of the swarm CA: a real libtorrent session
  without a credential the control plane issued (none, or one of its own CA)
  reaches the seeding worker and gets no piece, while a credentialed one completes;
- manifests are signed by the control plane: an unsigned or altered one is refused
  before anything is fetched, and a worker never loads the model it describes.

Real libtorrent sessions on 127.0.0.1, checkpoints of 1-2 MB."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import uuid

import libtorrent as lt
import psutil
import pytest
from django.conf import settings
from django.core.management import call_command

from core.blobstore import get_blob_store
from inference_client.checkpoints.services import PublishError, model_version_publish
from inference_protocol.backend import live_workers
from inference_protocol.checkpoints import (
    Manifest,
    ManifestFile,
    ManifestSignatureError,
    manifest_key,
    manifest_load,
    manifest_signed,
    torrent_key,
)
from inference_protocol.heartbeat import FAILED, read_nodes
from inference_protocol.signing import generate_keypair
from inference_protocol.swarm_credentials import DH_PARAMS_PEM, ca_cert_pem, issue_credential
from inference_worker.checkpoints.session import SwarmSession
from tests.inference_worker.checkpoints.conftest import env_for, origin, publish  # noqa: F401 (fixtures)
from tests.inference_worker.checkpoints.hosts import ROOT, fetch_host
from tests.inference_worker.workers import celery_worker, delete_queues
from tests.polling import wait_for

MB = 1_000_000
HEX = "ab" * 32


def worker_env(host_env, credential_dir=None) -> dict:
    """A worker as deployed: the public key only, its credential from files (if
    given), SWARM_LISTEN left to its default (the advertised address, 127.0.0.1)."""
    env = host_env(CONFIG_PUBLIC_KEY=settings.CONFIG_PUBLIC_KEY)
    env.pop("CONFIG_SIGNING_KEY", None)
    env.pop("SWARM_LISTEN", None)
    if credential_dir is not None:
        env.update(SWARM_CERT_FILE=str(credential_dir / "swarm-cert.pem"),
                   SWARM_KEY_FILE=str(credential_dir / "swarm-key.pem"))
    return env


class Peer:
    """A plain libtorrent session on loopback that tries to download from ``seed``."""

    def __init__(self, name: str, torrent: bytes, save_path, seed: tuple[str, int], credential=None):
        self.name, self.seed = name, seed
        self.session = lt.session({
            "listen_interfaces": "127.0.0.1:0s", "enable_dht": False, "enable_lsd": False,
            "enable_upnp": False, "enable_natpmp": False, "enable_outgoing_utp": False,
            "enable_incoming_utp": False, "min_reconnect_time": 1,
            "alert_mask": lt.alert_category.error | lt.alert_category.peer | lt.alert_category.connect})
        params = lt.add_torrent_params()
        params.ti, params.save_path = lt.torrent_info(torrent), str(save_path)
        params.flags &= ~(lt.torrent_flags.auto_managed | lt.torrent_flags.paused)
        self.handle = self.session.add_torrent(params)
        if credential is not None:
            self.handle.set_ssl_certificate_buffer(credential.cert_pem, credential.key_pem, DH_PARAMS_PEM)
        self.refusals: list[str] = []

    def poll(self) -> lt.torrent_status:
        """Dial the seed again, note every connection it closed; the status now."""
        self.handle.connect_peer(self.seed)
        for alert in self.session.pop_alerts():
            if isinstance(alert, lt.peer_disconnected_alert | lt.peer_error_alert):
                self.refusals.append(alert.message())
        return self.handle.status()


@pytest.mark.slow
@pytest.mark.needs_services
def test_only_a_host_with_a_control_plane_credential_gets_pieces_from_a_worker(
        publish, env_for, tmp_path):  # noqa: F811 (fixtures)
    published = publish({"model.bin": 2 * MB}, piece_size=64 * 1024)
    raw = get_blob_store().get(torrent_key(published.model, "v1", "model.bin"))
    info = lt.torrent_info(raw)
    assert info.priv() and info.ssl_cert() == ca_cert_pem(settings.CONFIG_SIGNING_KEY)

    call_command("swarm_credential", "--host", "seed", "--out", str(tmp_path / "cred"), stdout=io.StringIO())
    seed = fetch_host("seed", model=published.model, version="v1", cache=tmp_path / "seed",
                      env=worker_env(env_for, tmp_path / "cred"))
    try:
        host, _, port = seed.wait_present(60)["listen"].rpartition(":")
        assert host == "127.0.0.1"
        # Every socket the worker bound is on its own address: the swarm's (TLS) listener,
        # and no DHT, local discovery, UPnP or NAT-PMP socket on another interface.
        sockets = psutil.Process(seed.proc.pid).net_connections(kind="inet")
        bound = {(c.laddr.ip, c.type) for c in sockets if c.status in (psutil.CONN_LISTEN, psutil.CONN_NONE)}
        assert {ip for ip, _ in bound} == {"127.0.0.1"}, sockets
        assert any(c.laddr.port == int(port) and c.status == psutil.CONN_LISTEN for c in sockets)

        address = (host, int(port))
        other_ca_key, _ = generate_keypair()
        insider = Peer("insider", raw, tmp_path / "insider", address,
                       issue_credential(settings.CONFIG_SIGNING_KEY, "insider", days=1))
        outsiders = [Peer("no credential", raw, tmp_path / "none", address),
                     Peer("a credential of its own CA", raw, tmp_path / "own", address,
                          issue_credential(other_ca_key, "mallory", days=1))]

        def settled():
            statuses = [p.poll() for p in (insider, *outsiders)]
            return statuses[0].is_seeding and all(len(p.refusals) >= 2 for p in outsiders)

        wait_for(settled, timeout=60, interval=0.25, what="the insider's copy, the outsiders' refusals")
        for outsider in outsiders:
            status = outsider.handle.status()
            assert (status.num_pieces, status.total_payload_download) == (0, 0), outsider.name
            # It reached the seed, whose TLS handshake turned it away.
            assert any(f"{host}:{port}" in m and "SSL" in m for m in outsider.refusals), outsider.refusals
        assert (tmp_path / "insider" / "model.bin").read_bytes() == published.files["model.bin"].read_bytes()
    finally:
        seed.close()


@pytest.mark.needs_services
def test_a_worker_without_a_credential_refuses_to_join_the_swarm(publish, env_for, tmp_path):  # noqa: F811
    published = publish({"model.bin": 100_000})
    result = subprocess.run(
        [sys.executable, "manage.py", "model_fetch", "--model", published.model, "--version", "v1",
         "--cache", str(tmp_path / "c"), "--json"],
        cwd=ROOT, env=worker_env(env_for), capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    event = json.loads(result.stdout.splitlines()[-1])
    assert event["code"] == "swarm_credential_missing"
    assert "set SWARM_CERT_FILE and SWARM_KEY_FILE" in event["reason"]


def test_the_session_turns_every_discovery_off_and_listens_with_tls_only():
    swarm = SwarmSession(listen="127.0.0.1:0", credential=issue_credential(settings.CONFIG_SIGNING_KEY,
                                                                           "test", days=1))
    try:
        live = swarm.session.get_settings()
        assert not any(live[name] for name in ("enable_dht", "enable_lsd", "enable_upnp", "enable_natpmp"))
        assert swarm.listen_port > 0 and swarm.session.listen_port() == 0  # an SSL listener, no plain one
        mine = [c for c in psutil.Process().net_connections(kind="tcp") if c.laddr.port == swarm.listen_port]
        assert [(c.laddr.ip, c.status) for c in mine] == [("127.0.0.1", psutil.CONN_LISTEN)]
    finally:
        swarm.close()


def _manifest() -> Manifest:
    entry = ManifestFile(path="model.bin", size=10, sha256=HEX, piece_size=65536, info_hash_v1="cd" * 20,
                         info_hash_v2=HEX)
    return Manifest(model="m", version="v1", files=(entry,), created_by="ops",
                    created_at="2026-01-01T00:00:00")


def _altered(raw: bytes) -> bytes:
    data = json.loads(raw)
    data["files"][0]["info_hash_v2"] = "ef" * 32  # another torrent: the attacker's weights
    return json.dumps(data).encode()


def _unsigned(raw: bytes) -> bytes:
    data = json.loads(raw)
    del data["signature"]
    return json.dumps(data).encode()


def test_manifests_are_loaded_only_with_the_control_planes_signature():
    signed = manifest_signed(_manifest(), settings.CONFIG_SIGNING_KEY)
    loaded = manifest_load(signed, model="m", version="v1", public_key=settings.CONFIG_PUBLIC_KEY)
    assert loaded == _manifest()
    other_key, _ = generate_keypair()
    cases = [(_unsigned(signed), "is unsigned"), (_altered(signed), "its signature does not verify"),
             (manifest_signed(_manifest(), other_key), "signed by another key")]
    for raw, message in cases:
        with pytest.raises(ManifestSignatureError, match=message):
            manifest_load(raw, model="m", version="v1", public_key=settings.CONFIG_PUBLIC_KEY)
    with pytest.raises(ManifestSignatureError, match="this node has no CONFIG_PUBLIC_KEY"):
        manifest_load(signed, model="m", version="v1", public_key="")


@pytest.mark.needs_services
@pytest.mark.parametrize("doctor, message", [(_unsigned, "is unsigned"),
                                             (_altered, "signature does not verify")])
def test_a_fetch_refuses_an_unsigned_or_altered_manifest_before_fetching_anything(
        publish, env_for, tmp_path, doctor, message):  # noqa: F811
    published = publish({"model.bin": 100_000})
    store = get_blob_store()
    key = manifest_key(published.model, "v1")
    store.put(key, doctor(store.get(key)))
    result = subprocess.run(
        [sys.executable, "manage.py", "model_fetch", "--model", published.model, "--version", "v1",
         "--cache", str(tmp_path / "c"), "--json"],
        cwd=ROOT, env=env_for(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    event = json.loads(result.stdout.splitlines()[-1])
    assert event["code"] == "manifest_signature" and message in event["reason"]
    assert f"nothing of {published.label} was fetched or loaded" in event["reason"]
    assert not (tmp_path / "c" / published.model / "v1").exists()
    assert not (tmp_path / "c" / published.model / "v1.partial").exists()


@pytest.mark.slow
@pytest.mark.needs_services
def test_a_worker_never_loads_the_model_of_an_altered_manifest(db, tmp_path, monkeypatch, origin):  # noqa: F811
    model = f"sec-{uuid.uuid4().hex[:8]}"
    for name, value in {"S3_ENDPOINT_URL": origin.url, "MODEL_CACHE_DIR": str(tmp_path / "cache"),
                        "SWARM_LISTEN": "127.0.0.1:0", "SWARM_ADVERTISE_HOST": "127.0.0.1"}.items():
        monkeypatch.setenv(name, value)
    src = tmp_path / "model.gguf"
    src.write_bytes(b"GGUF" + b"\0" * 200_000)
    model_version_publish(model=model, version="v1", paths=[src], created_by="tests")
    store = get_blob_store()
    store.put(manifest_key(model, "v1"), _altered(store.get(manifest_key(model, "v1"))))
    spec = {model: {"engine": "llamacpp", "checkpoint": {"model": model, "version": "v1"}}}
    try:
        with celery_worker(spec, [f"gpu.{model}"], concurrency=2):
            entry = wait_for(lambda: next((n["checkpoints"][f"{model}@v1"] for n in read_nodes() if
                                           n["checkpoints"].get(f"{model}@v1", {}).get("state") == FAILED),
                                          None), timeout=60, what="a refused fetch")
            assert "signature does not verify" in entry["reason"]
            assert live_workers(model) == []
    finally:
        delete_queues([f"gpu.{model}"])


def test_only_the_control_plane_publishes(db, tmp_path, settings):
    src = tmp_path / "w.bin"
    src.write_bytes(b"w" * 100)
    settings.CONFIG_SIGNING_KEY = ""
    with pytest.raises(PublishError, match="no CONFIG_SIGNING_KEY") as raised:
        model_version_publish(model="m", version="v1", paths=[src], created_by="tests")
    assert raised.value.code == "no_signing_key"


def test_a_host_credential_is_signed_by_the_ca_that_torrents_carry():
    from cryptography import x509

    credential = issue_credential(settings.CONFIG_SIGNING_KEY, "w1", days=1)
    cert = x509.load_pem_x509_certificate(credential.cert_pem.encode())
    ca = x509.load_pem_x509_certificate(ca_cert_pem(settings.CONFIG_SIGNING_KEY).encode())
    cert.verify_directly_issued_by(ca)  # raises if not
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["*"]  # libtorrent's match for every torrent
