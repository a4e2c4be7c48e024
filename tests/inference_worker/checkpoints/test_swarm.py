"""The swarm under faults: real libtorrent sessions in separate processes on
127.0.0.1, links capped so transfers take seconds, S3 (rclone) as web seed.

Each host is a `manage.py model_fetch` process (about 1 s of CPU to start), so
the tests share hosts between the claims they prove: 13 processes in all."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from core.blobstore import get_blob_store
from inference_protocol.checkpoints import torrent_key
from inference_protocol.heartbeat import PRESENT, read_nodes
from tests.livesubprocess import free_port
from tests.polling import wait_for

from .hosts import ROOT, Host, fetch_host
from .origin import Origin

pytestmark = [pytest.mark.slow, pytest.mark.needs_services]
MB = 1_000_000


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_exact(host: Host, published) -> None:
    for name, source in published.files.items():
        assert sha(host.cache / published.model / published.version / name) == sha(source), host.name


@pytest.fixture
def hosts():
    started: list[Host] = []
    yield started
    for h in started:  # all at once: each takes a while to close its session
        h.terminate()
    for h in started:
        h.close()


def test_fetch_shows_progress_and_verifies_every_file(publish, tmp_path, env_for):
    published = publish({"model.bin": 2 * MB, "tokenizer/vocab.json": 50_000})
    # A person's run: a progress bar (bytes, rate, peers, ETA), then one line. Its web-seed
    # URL lives 2 s (rclone checks): the download outlives it only if renewals work.
    result = subprocess.run([sys.executable, "manage.py", "model_fetch", "--model", published.model,
                             "--version", "v1", "--cache", str(tmp_path / "c")], cwd=ROOT,
                            env=env_for(rate=1 * MB, MODEL_WEB_SEED_EXPIRES="2"), capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert f"{published.label} is present and verified in {tmp_path / 'c'}" in result.stdout
    assert published.label in result.stderr and "B/s" in result.stderr and "peers" in result.stderr
    assert "100%" in result.stderr
    for name, source in published.files.items():
        assert sha(tmp_path / "c" / published.model / "v1" / name) == sha(source)


def test_a_host_with_a_corrupted_copy_is_banned_and_everyone_ends_exact(publish, tmp_path, env_for, hosts):
    published = publish({"model.bin": 4 * MB}, piece_size=64 * 1024)
    corrupt = tmp_path / "liar"
    corrupt.mkdir()
    data = bytearray(published.files["model.bin"].read_bytes())
    for offset in range(100, len(data), 2 * 64 * 1024):  # every other piece
        data[offset] ^= 0xFF
    (corrupt / "model.bin").write_bytes(data)
    torrent = tmp_path / "model.bin.torrent"
    torrent.write_bytes(get_blob_store().get(torrent_key(published.model, "v1", "model.bin")))
    liar = Host("liar", ["tests/inference_worker/checkpoints/lying_host.py", published.label, str(torrent),
                         str(corrupt)], env_for(), corrupt)
    hosts.append(liar)
    liar_address = liar.wait_for(lambda ev: next((e["listen"] for e in ev if e["event"] == "ready"), None),
                                 timeout=30, what="ready")
    # A slow origin: the honest hosts take most pieces from the (fast) liar.
    with Origin(settings.S3_ENDPOINT_URL, rate=0.5 * MB) as slow:
        env = dict(env_for(), S3_ENDPOINT_URL=slow.url)
        honest = [fetch_host(f"h{i}", model=published.model, version="v1", cache=tmp_path / f"h{i}", env=env)
                  for i in range(2)]
        hosts += honest
        events = [h.wait_present(60) for h in honest]
    for h in honest:
        assert_exact(h, published)
    assert sum(e["hash_failures"] for e in events) > 0
    assert any(liar_address in e["banned"] for e in events), events
    assert liar.events("progress")[-1]["uploaded"] > 0


def test_killed_hosts_do_not_stop_the_rest_and_a_restarted_one_resumes(publish, tmp_path, env_for, hosts):
    # No peer has anything at first: the web seed is the only source.
    published = publish({"model.bin": 6 * MB})
    size = published.manifest.total_size
    env = env_for(rate=1 * MB)
    hosts += [fetch_host(f"h{i}", model=published.model, version="v1", cache=tmp_path / f"h{i}", env=env)
              for i in range(5)]
    victims = hosts[:2]
    had = {}
    for h in victims:
        progress = h.wait_for(lambda ev: next((e for e in reversed(ev) if e["event"] == "progress"
                                               and 20 <= e["percent"] < 90), None), timeout=90, what="20%")
        h.kill()
        had[h.name] = progress["done_bytes"]
    events = [h.wait_present(120) for h in hosts[2:]]
    for h in hosts[2:]:
        assert_exact(h, published)
    assert sum(e["uploaded"] for e in events) > 0, "peers shared pieces, not only the web seed"
    entry = wait_for(lambda: next((n["checkpoints"][published.label] for n in read_nodes()
                                   if n["swarm"] == events[0]["listen"]
                                   and n["checkpoints"][published.label]["state"] == PRESENT), None),
                     timeout=10, what="a heartbeat saying present")
    assert entry["percent"] == 100.0 and entry["done_bytes"] == entry["total_bytes"] == size

    again = fetch_host("h0-again", model=published.model, version="v1", cache=victims[0].cache, env=env)
    hosts.append(again)
    event = again.wait_present(120)
    assert event["resumed_bytes"] >= had["h0"] * 0.5 > 0, (event, had)
    assert_exact(again, published)


def test_transfers_finish_after_redis_is_gone(publish, tmp_path, env_for, hosts):
    published = publish({"model.bin": 4 * MB})
    port = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no"], stdout=subprocess.DEVNULL)
    try:
        env = env_for(redis_url=f"redis://127.0.0.1:{port}/0")
        seed = fetch_host("seed", model=published.model, version="v1", cache=tmp_path / "seed", env=env)
        hosts.append(seed)
        seed.wait_present()
        # Peers only from here on: no web seed, so the swarm itself must carry the bytes, slowly
        # enough (8 s) that Redis goes while they are still at it on a loaded machine.
        slow = dict(env, SWARM_UPLOAD_RATE_LIMIT=str(MB // 2), SWARM_DOWNLOAD_RATE_LIMIT=str(MB // 2))
        peers = [fetch_host(f"p{i}", model=published.model, version="v1", cache=tmp_path / f"p{i}", env=slow,
                            extra_args=("--no-web-seed",)) for i in range(2)]
        hosts += peers
        for p in peers:
            p.wait_for(lambda ev: any(e["event"] == "progress" and e["peers"] >= 1 and e["percent"] > 5
                                      for e in ev), timeout=90, what="a formed swarm")
    finally:
        redis.kill()
        redis.wait()
    for p in peers:
        assert p.progress()["percent"] < 100
    for p in peers:
        p.wait_present(120)
        assert_exact(p, published)
        assert "cannot read peers from Redis" in p.output()


def test_the_web_seed_resumes_when_the_origin_comes_back(publish, tmp_path, env_for, hosts):
    # The origin alone, slow enough that the outage falls within the fetch.
    published = publish({"model.bin": 6 * MB})
    with Origin(settings.S3_ENDPOINT_URL, rate=1 * MB) as origin:
        env = dict(env_for(), S3_ENDPOINT_URL=origin.url)
        host = fetch_host("h", model=published.model, version="v1", cache=tmp_path / "h", env=env)
        hosts.append(host)
        wait_for(lambda: origin.bytes_served > 1 * MB, timeout=60, what="the first megabyte")
        origin.outage()
        # libtorrent asked while it was down and got S3's 503: before, it never asked that
        # web seed again, and the bytes came back only with the next URL (30 s later).
        wait_for(lambda: origin.refused >= 1, timeout=30, what="a request during the outage")
        origin.restore()
        assert origin.resumed.wait(20), "the web seed did not resume after the origin came back"
        host.wait_present(120)
    assert_exact(host, published)
