"""Line and word diffs between two bodies, produced as a stream of text
chunks (unified-diff hunks) so multi-MB diffs are never built as one string.

Common leading and trailing lines are skipped before matching, so a small
edit of a huge body costs a linear scan; the word diff only compares words
inside changed hunks. Matching is Myers' diff in linear space
(diff-match-patch) on tokens mapped to single characters, under a deadline:
`SequenceMatcher(autojunk=False)` was quadratic (2 s for 16 KiB of
alternating lines, 4x per doubling). Past the deadline the result is still a
correct diff, only coarser; `Diff.coarse` says so.
"""

from __future__ import annotations

import difflib
import re
import time
from collections.abc import Iterator

from diff_match_patch import diff_match_patch

from .bodies import common_affixes, split_lines

WORD = re.compile(r"\s+|\w+|[^\w\s]")
_MAX_CHAR = 0x10FFFF


class Budget:
    """The time one diff may spend matching, shared by its line and word passes."""

    def __init__(self, seconds: float):
        self.deadline = time.time() + seconds
        self.coarse = False

    def opcodes(self, a: list[str], b: list[str]) -> list[tuple]:
        """difflib-style opcodes between two token lists, within the deadline."""
        codes: dict[str, str] = {}
        try:
            s1 = "".join(codes.setdefault(t, chr(len(codes))) for t in _guard(a, codes))
            s2 = "".join(codes.setdefault(t, chr(len(codes))) for t in _guard(b, codes))
        except OverflowError:  # more distinct tokens than characters: one changed block
            self.coarse = True
            return [("replace", 0, len(a), 0, len(b))] if a or b else []
        if time.time() >= self.deadline:
            self.coarse = True
            return [("replace", 0, len(a), 0, len(b))] if a and b else _one_sided(a, b)
        dmp = diff_match_patch()
        diffs = dmp.diff_main(s1, s2, False, self.deadline)
        if time.time() >= self.deadline:
            self.coarse = True
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


def _guard(tokens, codes):
    for t in tokens:
        if t not in codes and len(codes) >= _MAX_CHAR:
            raise OverflowError
        yield t


def _one_sided(a, b):
    return [("delete", 0, len(a), 0, 0)] if a else [("insert", 0, 0, 0, len(b))] if b else []


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


def _grouped(opcodes: list[tuple], context: int):
    matcher = difflib.SequenceMatcher(None, (), ())
    matcher.opcodes = opcodes  # difflib groups opcodes it did not compute (get_opcodes returns these)
    return matcher.get_grouped_opcodes(context)


def _hunks(a: list[str], b: list[str], context: int, budget: Budget):
    pre, suf = common_affixes(a, b)
    pre, suf = max(0, pre - context), max(0, suf - context)
    opcodes = budget.opcodes(a[pre:len(a) - suf], b[pre:len(b) - suf])
    if not opcodes:
        return
    for group in _grouped(opcodes, context):
        yield [(tag, i1 + pre, i2 + pre, j1 + pre, j2 + pre) for tag, i1, i2, j1, j2 in group]


def _header(group) -> str:
    i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
    return f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@\n"


def _nl(line: str) -> str:
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"


COARSE_NOTE = "\\ Coarse diff: matching ran out of its time budget (PROMPT_DIFF_TIMEOUT_S).\n"


def line_diff(old: str, new: str, *, old_name: str, new_name: str, context: int = 3,
              budget: Budget | None = None) -> Iterator[str]:
    budget = budget or Budget(60.0)
    a, b = split_lines(old), split_lines(new)
    hunks = list(_hunks(a, b, context, budget))  # the matching, done before the first byte
    yield f"--- {old_name}\n+++ {new_name}\n"
    for group in hunks:
        out = [_header(group)]
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(" " + _nl(line) for line in a[i1:i2])
                continue
            out.extend("-" + _nl(line) for line in a[i1:i2])
            out.extend("+" + _nl(line) for line in b[j1:j2])
        yield "".join(out)
    if budget.coarse:
        yield COARSE_NOTE


def _word_diff(old: str, new: str, budget: Budget) -> str:
    a, b = WORD.findall(old), WORD.findall(new)
    out = []
    for tag, i1, i2, j1, j2 in budget.opcodes(a, b):
        if tag == "equal":
            out.append("".join(a[i1:i2]))
            continue
        if i2 > i1:
            out.append("[-" + "".join(a[i1:i2]) + "-]")
        if j2 > j1:
            out.append("{+" + "".join(b[j1:j2]) + "+}")
    return "".join(out)


def word_diff(old: str, new: str, *, old_name: str, new_name: str, context: int = 3,
              budget: Budget | None = None) -> Iterator[str]:
    """git --word-diff=plain style: [-removed-]{+added+} inside each hunk."""
    budget = budget or Budget(60.0)
    a, b = split_lines(old), split_lines(new)
    hunks = list(_hunks(a, b, context, budget))
    yield f"--- {old_name}\n+++ {new_name}\n"
    for group in hunks:
        out = [_header(group)]
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.append("".join(a[i1:i2]))
            else:
                out.append(_word_diff("".join(a[i1:i2]), "".join(b[j1:j2]), budget))
        yield "".join(out)
    if budget.coarse:
        yield COARSE_NOTE
