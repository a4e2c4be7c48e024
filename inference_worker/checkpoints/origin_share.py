"""Which pieces of a file a host asks the origin (the object store, its web seed)
for, so that the origin sends each piece about once and the swarm does the rest.

libtorrent alone does not: every host's web seed connection asks for the rarest
pieces it lacks, and a piece on its way from the origin to one host looks just as
rare to the others, so they ask for it too; once every piece is somewhere in the
swarm, the web seeds keep serving whatever their hosts still lack. Measured with 16
hosts (bench/distribution.py): the origin, whose link is the bound, sent 2.35
copies, and every host finished at 2.4x the bound.

So the hosts that are downloading a file split it: sorted by swarm address (from
the heartbeats), host ``rank`` of ``members`` owns the rank-th contiguous range of
pieces. A host raises its own range's pieces that no peer has to the top priority
(its web seed picks them first; a peer connection cannot pick a piece its peer
lacks, so peers are unaffected), and keeps its web seed only while its range has
such a piece. Membership changes move the ranges, so the range of a host that
died is taken over within a heartbeat TTL.

A web seed request is a contiguous run of open pieces, as long as the connection's
request queue (the first one covered a whole 8 MB file), whatever their priority:
outside its range, a host sets every piece that no peer has to priority 0 (not
wanted), from before the torrent starts, so requests stop at the range's edges;
such a piece is wanted again as soon as a peer announces it.

Hosts that start together would each see few of the others at first, take a
large range, and ask the origin for it: a host first says in Redis that it fetches
the version and waits ``start_at`` (one peer refresh) before its first origin
request; peers can trade meanwhile.

A piece that failed its hash check came from a peer that lies or whose disk is
damaged, and that peer may well be the only one announcing it until it is banned:
in its owner's range, such a piece counts as one that no peer has.

If nothing arrives for ``fallback_s`` (membership views that disagree, say, with
Redis gone), the host stops splitting and asks the origin for whatever it lacks.

An origin that answers an HTTP error (S3's 503 in an outage, say) is asked again
only through a fresh web seed: libtorrent 2.1 takes any status it does not accept
to mean that the server lacks the file, and a web seed lacking every file is never
connected again (it came back at the next URL renewal, 30 s later). So once the
web seed failed and holds no connection, it is attached afresh; libtorrent connects
a web seed at its next second tick, so that is at most one request a second.
"""

from __future__ import annotations

from collections.abc import Set

import libtorrent as lt

TOP, DEFAULT, SKIP = 7, 4, 0


def wanted_priorities(have, availability, web_seeds: int, own: range, failed) -> list[int]:
    """Each piece's priority: TOP for the pieces of ``own`` that this host asks the
    origin for, SKIP for the other pieces that no peer has, DEFAULT for the rest."""
    wanted = [DEFAULT] * len(have)
    for q, had in enumerate(have):
        if had:
            continue
        unavailable = availability[q] <= web_seeds
        if q in own and (unavailable or q in failed):
            wanted[q] = TOP
        elif unavailable:
            wanted[q] = SKIP
    return wanted


class OriginShare:
    handle: lt.torrent_handle  # the torrent's, set by the fetch once it is added

    def __init__(self, num_pieces: int, url: str, *, rank: int, members: int, fallback_s: float,
                 start_at: float):
        self.num_pieces, self.url = num_pieces, url
        self.fallback_s, self.start_at = fallback_s, start_at
        self.attached = False  # the torrent is added without its web seed
        self.failures_seen = 0  # the web seed's failures (url_seed_alert) when it was last attached
        self.fallback = False
        self.best, self.best_at = -1, start_at
        own = self.owned(rank, members)
        self.priorities = [TOP if q in own else SKIP for q in range(num_pieces)]

    def owned(self, rank: int, members: int) -> range:
        if self.fallback or members <= 1:
            return range(self.num_pieces)
        return range(rank * self.num_pieces // members, (rank + 1) * self.num_pieces // members)

    def update(self, status, rank: int, members: int, now: float, failed: Set[int] = frozenset(),
               web_seed_failures: int = 0) -> None:
        """Priorities and web seed for this tick (``status``: the handle's, with pieces;
        ``failed``: pieces that failed their hash check here; ``web_seed_failures``: how
        many times the web seed failed since the torrent was added)."""
        if status.num_pieces > self.best:
            self.best, self.best_at = status.num_pieces, now
        elif not self.fallback and now - self.best_at > self.fallback_s:
            self.fallback = True
        have = status.pieces
        web = [p for p in self.handle.get_peer_info() if p.connection_type == lt.peer_info.web_seed]
        web_seeds = sum(1 for p in web if p.flags & lt.peer_info.seed)
        availability = self.handle.piece_availability()  # counts every connected seed, web seeds too
        if len(availability) != self.num_pieces:  # complete since the status was read: no picker left
            return
        wanted = wanted_priorities(have, availability, web_seeds, self.owned(rank, members), failed)
        changed = [(q, p) for q, (p, old) in enumerate(zip(wanted, self.priorities, strict=True)) if p != old]
        if changed:
            self.handle.prioritize_pieces(changed)
            self.priorities = wanted
        needs_origin = TOP in wanted and now >= self.start_at
        failed_since = web_seed_failures > self.failures_seen and not web
        if needs_origin and self.attached and failed_since:
            self.handle.remove_url_seed(self.url)
        if needs_origin and (not self.attached or failed_since):
            self.handle.add_url_seed(self.url)
            self.failures_seen = web_seed_failures
        elif not needs_origin and self.attached:
            self.handle.remove_url_seed(self.url)
        self.attached = needs_origin

    def renew(self, url: str) -> None:
        """A fresh presigned URL for the same object."""
        if self.attached:
            self.handle.remove_url_seed(self.url)
            self.handle.add_url_seed(url)
        self.url = url
