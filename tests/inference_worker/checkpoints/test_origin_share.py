"""The origin share on a real libtorrent handle (no peers): which pieces a host
asks the web seed for, and when it attaches the web seed."""

from __future__ import annotations

import libtorrent as lt
import pytest
from django.conf import settings

from inference_client.checkpoints.torrents import torrent_build
from inference_protocol.swarm_credentials import ca_cert_pem, issue_credential
from inference_worker.checkpoints.origin_share import DEFAULT, SKIP, TOP, OriginShare, wanted_priorities
from inference_worker.checkpoints.session import SwarmSession

URL = "http://127.0.0.1:9/bucket/model.bin?X-Amz-Signature=x"


@pytest.fixture(scope="module")
def torrent(tmp_path_factory):
    path = tmp_path_factory.mktemp("src") / "model.bin"
    path.write_bytes(bytes(range(256)) * 4096 * 10)  # 10 MiB: 160 pieces of 64 KiB
    return lt.torrent_info(torrent_build(path, piece_size=64 * 1024,
                                              ca_cert_pem=ca_cert_pem(settings.CONFIG_SIGNING_KEY)).data)


@pytest.fixture
def swarm():
    session = SwarmSession(listen="127.0.0.1:0",
                           credential=issue_credential(settings.CONFIG_SIGNING_KEY, "test", days=1))
    yield session
    session.close()


def added(swarm, torrent, tmp_path, share: OriginShare):
    params = lt.add_torrent_params()
    params.ti, params.save_path = torrent, str(tmp_path)
    params.piece_priorities = share.priorities
    params.flags &= ~(lt.torrent_flags.auto_managed | lt.torrent_flags.paused)
    share.handle = swarm.add(params)
    return share.handle


@pytest.mark.parametrize("members", [1, 2, 3, 7, 16, 160, 200])
def test_the_ranges_of_the_members_cover_every_piece_once(members):
    share = OriginShare(160, URL, rank=0, members=members, fallback_s=10, start_at=0)
    covered = [q for rank in range(members) for q in share.owned(rank, members)]
    assert sorted(covered) == list(range(160))


def test_a_host_asks_the_origin_only_for_its_range_and_only_after_the_others_could_see_it(
        swarm, torrent, tmp_path):
    share = OriginShare(torrent.num_pieces(), URL, rank=1, members=4, fallback_s=10, start_at=100.0)
    handle = added(swarm, torrent, tmp_path, share)
    own = range(40, 80)
    assert handle.get_piece_priorities() == [TOP if q in own else SKIP for q in range(160)]

    share.update(handle.status(), 1, 4, now=99.0)  # still settling: no web seed yet
    assert handle.url_seeds() == []
    share.update(handle.status(), 1, 4, now=100.0)
    assert handle.url_seeds() == [URL]

    # A host joins: the ranges move; pieces outside the new range stay unwanted
    # (nobody has them), so a web seed request cannot run past the range's edge.
    share.update(handle.status(), 1, 5, now=101.0)
    assert handle.get_piece_priorities() == [TOP if 32 <= q < 64 else SKIP for q in range(160)]

    share.renew(URL + "2")
    assert handle.url_seeds() == [URL + "2"]


def test_a_host_that_gains_nothing_for_the_fallback_time_asks_the_origin_for_everything(
        swarm, torrent, tmp_path):
    share = OriginShare(torrent.num_pieces(), URL, rank=3, members=4, fallback_s=5, start_at=0.0)
    handle = added(swarm, torrent, tmp_path, share)
    share.update(handle.status(), 3, 4, now=1.0)
    assert handle.get_piece_priorities()[:120] == [SKIP] * 120
    share.update(handle.status(), 3, 4, now=6.5)
    assert handle.get_piece_priorities() == [TOP] * 160
    assert handle.url_seeds() == [URL]


def test_a_piece_that_failed_its_hash_check_is_asked_of_the_origin_by_its_owner():
    # Ten pieces, this host owns 0-4; a (lying) peer announces every piece but 8 and 9,
    # 2 and 7 failed their hash check, 3 is here already; one web seed is connected.
    have = [q == 3 for q in range(10)]
    availability = [2] * 8 + [1, 1]
    wanted = wanted_priorities(have, availability, 1, range(0, 5), failed={2, 7})
    assert wanted == [DEFAULT, DEFAULT, TOP, DEFAULT, DEFAULT, DEFAULT, DEFAULT, DEFAULT, SKIP, SKIP]
