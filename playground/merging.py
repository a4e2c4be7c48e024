"""Three-way merges of version texts (line based, diff3's rule): regions
unchanged on both sides are kept; a region changed on one side takes that
side; changed the same way on both, it takes that change; changed differently,
it is a conflict, given with the base, ours and theirs for the user to resolve.

Lines are matched by playground.matching under the caller's budget: past its
deadline the matching is coarser, so changes (and conflicts) span more lines,
but every line kept as unchanged is unchanged."""

from __future__ import annotations

from .matching import Budget


def _sync_regions(base: list[str], a: list[str], b: list[str],
                  budget: Budget) -> list[tuple[int, int, int, int, int, int]]:
    """Base ranges matched, unchanged, in both a and b (with their places in a and b)."""
    amatches = budget.matching_blocks(base, a)
    bmatches = budget.matching_blocks(base, b)
    ia = ib = 0
    regions = []
    while ia < len(amatches) and ib < len(bmatches):
        abase, amatch, alen = amatches[ia]
        bbase, bmatch, blen = bmatches[ib]
        start, end = max(abase, bbase), min(abase + alen, bbase + blen)
        if start < end:
            asub, bsub = amatch + (start - abase), bmatch + (start - bbase)
            regions.append((start, end, asub, asub + end - start, bsub, bsub + end - start))
        if abase + alen < bbase + blen:
            ia += 1
        else:
            ib += 1
    regions.append((len(base), len(base), len(a), len(a), len(b), len(b)))
    return regions


def merge3(base: str, ours: str, theirs: str, budget: Budget) -> dict:
    """{"merged": the text, or None when there are conflicts, "conflicts": n,
    "hunks": [{"kind": "same", "text"} | {"kind": "conflict", "base", "ours", "theirs"}]}."""
    b, o, t = (s.splitlines(keepends=True) for s in (base, ours, theirs))
    hunks: list[dict] = []

    def keep(lines):
        if not lines:
            return
        if hunks and hunks[-1]["kind"] == "same":
            hunks[-1]["text"] += "".join(lines)
        else:
            hunks.append({"kind": "same", "text": "".join(lines)})

    iz = io = it = 0
    for zstart, zend, ostart, oend, tstart, tend in _sync_regions(b, o, t, budget):
        if ostart > io or tstart > it or zstart > iz:
            same, mine, other = b[iz:zstart], o[io:ostart], t[it:tstart]
            if mine == other or other == same:
                keep(mine)
            elif mine == same:
                keep(other)
            else:
                hunks.append({"kind": "conflict", "base": "".join(same), "ours": "".join(mine),
                              "theirs": "".join(other)})
        keep(b[zstart:zend])
        iz, io, it = zend, oend, tend
    conflicts = sum(h["kind"] == "conflict" for h in hunks)
    merged = None if conflicts else "".join(h["text"] for h in hunks)
    return {"merged": merged, "conflicts": conflicts, "hunks": hunks}
