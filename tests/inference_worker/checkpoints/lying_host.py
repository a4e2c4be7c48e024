"""A host that lies (fault injection for tests): it serves a copy of a checkpoint
file whose bytes were flipped on disk, claiming every piece, and advertises itself
in Redis as holding the version, so honest hosts connect to it.

    python lying_host.py LABEL TORRENT_FILE DATA_DIR

Unlike a real worker, which re-adds a present version in seed mode (libtorrent
then hashes each piece before its first upload), it tells libtorrent it verified
everything already.
"""

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import libtorrent as lt  # noqa: E402
from django.conf import settings  # noqa: E402

from inference_protocol.heartbeat import PRESENT, publish  # noqa: E402
from inference_protocol.swarm_credentials import issue_credential  # noqa: E402
from inference_worker.checkpoints.session import SwarmSession  # noqa: E402


def main(label: str, torrent: str, data_dir: str) -> None:
    # An insider (a worker with a damaged disk): it holds a credential.
    credential = issue_credential(settings.CONFIG_SIGNING_KEY, "liar", days=1)
    swarm = SwarmSession(listen="127.0.0.1:0", credential=credential)
    info = lt.torrent_info(torrent)
    params = lt.add_torrent_params()
    params.ti = info
    params.save_path = data_dir
    params.have_pieces = [True] * info.num_pieces()  # "verified": the flipped bytes go out as they are
    params.flags &= ~(lt.torrent_flags.auto_managed | lt.torrent_flags.paused)
    handle = swarm.add(params)
    address = f"127.0.0.1:{swarm.listen_port}"
    print(json.dumps({"event": "ready", "listen": address}), flush=True)
    while True:
        record = {"worker": f"liar:{os.getpid()}", "at": time.time(), "swarm": address,
                  "checkpoints": {label: {"state": PRESENT, "percent": 100.0}}}
        publish([], record)
        print(json.dumps({"event": "progress", "uploaded": handle.status().total_payload_upload}), flush=True)
        time.sleep(0.5)


if __name__ == "__main__":
    main(*sys.argv[1:4])
