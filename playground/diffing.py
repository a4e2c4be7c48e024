"""Line and word diffs between two bodies, produced as a stream of text
chunks (unified-diff hunks) so multi-MB diffs are never built as one string.

Common leading and trailing lines are skipped before matching, so a small
edit of a huge body costs a linear scan; the word diff only compares words
inside changed hunks. Matching is playground.matching's, under a deadline
(PROMPT_DIFF_TIMEOUT_S): past it the result is still a correct diff, only
coarser; `Budget.coarse` says so.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator

from .bodies import common_affixes, split_lines
from .matching import Budget

WORD = re.compile(r"\s+|\w+|[^\w\s]")


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
