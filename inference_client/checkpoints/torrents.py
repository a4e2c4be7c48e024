"""Torrents of checkpoint files: one hybrid (BitTorrent v1 + v2) torrent per file.

Why one torrent per file, and hybrid rather than v2 only: every worker adds the
object store as a BEP 19 web seed with a presigned URL, whose signature covers
its path and query string. libtorrent requests a single-file torrent's web seed
URL exactly as given, but appends "<name>/<path>" to a multi-file torrent's URL
(a different, unsigned URL), and it counts a v2-only torrent as multi-file even
for one file (it keeps a tail pad file in memory). BEP 17 http seeds append
query parameters, equally fatal to a signature. A hybrid single-file torrent keeps
the URL intact and still carries v2's SHA-256 Merkle tree: every 16 KiB block is
verified as it lands and a bad block is traced to the peer that sent it.

Private and SSL (inference_protocol.swarm_credentials): the info dict has
``private`` set, so libtorrent keeps the torrent out of the DHT, local discovery and
peer exchange (its ut_pex plugin does not attach to a private torrent), and carries
the swarm CA's certificate, so only hosts holding a credential of that CA get a piece.

Piece size: a peer can forward a piece only once it has all of it, so smaller
pieces pipeline sooner through the swarm; each piece costs a HAVE message to every
peer and a picker entry. ``piece_size_for`` aims at about 2,000 pieces a file,
between 64 KiB and 4 MiB (bench/distribution.py measured the trade-off).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import libtorrent as lt

MIN_PIECE_SIZE = 64 * 1024
MAX_PIECE_SIZE = 4 * 1024 * 1024
TARGET_PIECES = 2000
CREATOR = "promptyard model_publish"


@dataclasses.dataclass(frozen=True)
class BuiltTorrent:
    data: bytes
    info_hash_v1: str
    info_hash_v2: str
    piece_size: int


def piece_size_for(size: int) -> int:
    piece = MIN_PIECE_SIZE
    while piece < MAX_PIECE_SIZE and size // piece > TARGET_PIECES:
        piece *= 2
    return piece


def check_piece_size(piece_size: int) -> int:
    if piece_size < 16 * 1024 or piece_size & (piece_size - 1):
        raise ValueError(f"piece size {piece_size} is not a power of two of at least 16 KiB")
    return piece_size


def torrent_build(path: Path, *, piece_size: int, ca_cert_pem: str) -> BuiltTorrent:
    """Hash ``path`` into a private hybrid single-file SSL torrent of the swarm CA
    ``ca_cert_pem``, named after the file (no trackers, no web seeds: workers add
    their own presigned web seed)."""
    creator = lt.create_torrent(lt.list_files(str(path)), check_piece_size(piece_size), flags=0)
    creator.set_creator(CREATOR)
    creator.set_priv(True)
    creator.set_root_cert(ca_cert_pem)
    lt.set_piece_hashes(creator, str(path.parent))
    data = lt.bencode(creator.generate())
    hashes = lt.torrent_info(data).info_hashes()
    return BuiltTorrent(data=data, info_hash_v1=str(hashes.v1), info_hash_v2=str(hashes.v2),
                        piece_size=piece_size)
