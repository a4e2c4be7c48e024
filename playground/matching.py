"""Sequence matching under a deadline: the one diff primitive of every
diff-like computation (version diffs, delta encoding, merge previews, the eval
word diff, the `similarity` evaluator).

Matching is Myers' diff in linear space (diff-match-patch) on tokens mapped
to single characters (lines in line mode, words, or plain characters).
`difflib.SequenceMatcher` was quadratic: 2 s for 16 KiB of alternating
lines, 20 s to store a 4 MB body of repeating lines as a delta. Past the
deadline the result is still correct (its equal blocks are equal), only
coarser, and `Budget.coarse` says so; callers fall back to a coarse answer
(a whole-block change, a full snapshot) rather than spend longer.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from diff_match_patch import diff_match_patch

_MAX_CHAR = 0x10FFFF


class Budget:
    """The time one answer may spend matching, shared by all its passes."""

    def __init__(self, seconds: float):
        self.deadline = time.time() + seconds
        self.coarse = False

    def _diff(self, s1: str, s2: str) -> list[tuple[int, str]]:
        if time.time() >= self.deadline:
            self.coarse = True
            if s1 == s2:
                return [(0, s1)] if s1 else []
            return [(op, s) for op, s in ((-1, s1), (1, s2)) if s]
        if not set(s1).intersection(s2):  # nothing in common: Myers would search to the deadline
            return [(op, s) for op, s in ((-1, s1), (1, s2)) if s]
        dmp = diff_match_patch()
        dmp.Diff_Timeout = 0  # no half-match: its substring search does not watch the deadline
        diffs = dmp.diff_main(s1, s2, False, self.deadline)
        if time.time() >= self.deadline:
            self.coarse = True
        return diffs

    def opcodes(self, a: Sequence, b: Sequence) -> list[tuple]:
        """difflib-style opcodes between two token lists (hashable tokens), within the deadline."""
        codes: dict = {}
        try:
            s1 = "".join(codes.setdefault(t, chr(len(codes))) for t in _guard(a, codes))
            s2 = "".join(codes.setdefault(t, chr(len(codes))) for t in _guard(b, codes))
        except OverflowError:  # more distinct tokens than characters: one changed block
            self.coarse = True
            whole = (("delete", 0, len(a), 0, 0), ("insert", len(a), len(a), 0, len(b)))
            return _merge([op for op in whole if op[2] > op[1] or op[4] > op[3]])
        return _opcodes(self._diff(s1, s2))

    def text_opcodes(self, a: str, b: str) -> list[tuple]:
        """Opcodes between two strings, character by character."""
        return _opcodes(self._diff(a, b))

    def matching_blocks(self, a: Sequence, b: Sequence) -> list[tuple[int, int, int]]:
        """(i, j, n) for each equal run, then (len(a), len(b), 0), as difflib gives them."""
        blocks = [(i1, j1, i2 - i1) for tag, i1, i2, j1, _ in self.opcodes(a, b) if tag == "equal"]
        return [*blocks, (len(a), len(b), 0)]

    def ratio(self, a: str, b: str) -> float:
        """2 * matched characters / all characters (1.0 for two empty strings), like
        difflib's ratio but from a longest common subsequence; a lower bound when coarse."""
        if not a and not b:
            return 1.0
        matched = sum(i2 - i1 for tag, i1, i2, _, _ in self.text_opcodes(a, b) if tag == "equal")
        return 2.0 * matched / (len(a) + len(b))


def _guard(tokens, codes):
    for t in tokens:
        if t not in codes and len(codes) >= _MAX_CHAR:
            raise OverflowError
        yield t


def _opcodes(diffs: list[tuple[int, str]]) -> list[tuple]:
    out, i, j = [], 0, 0
    for op, text in diffs:
        n = len(text)
        if op == 0:
            out.append(("equal", i, i + n, j, j + n))
            i, j = i + n, j + n
        elif op == -1:
            out.append(("delete", i, i + n, j, j))
            i += n
        else:
            out.append(("insert", i, i, j, j + n))
            j += n
    return _merge(out)


def _merge(ops: list[tuple]) -> list[tuple]:
    """A delete next to an insert is one replace, as difflib reports it."""
    out: list[tuple] = []
    for op in ops:
        if out and {out[-1][0], op[0]} <= {"delete", "insert", "replace"}:
            _, i1, _, j1, _ = out[-1]
            out[-1] = ("replace", i1, op[2], j1, op[4])
        else:
            out.append(op)
    return out
