"""Line and word diffs between two bodies, produced as a stream of text
chunks (unified-diff hunks) so multi-MB diffs are never built as one string.

Common leading and trailing lines are skipped before matching, so a small
edit of a huge body costs a linear scan, not a quadratic match; the word
diff only compares words inside changed hunks.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator

from .bodies import common_affixes, split_lines

WORD = re.compile(r"\s+|\w+|[^\w\s]")


def _hunks(a: list[str], b: list[str], context: int):
    pre, suf = common_affixes(a, b)
    pre, suf = max(0, pre - context), max(0, suf - context)
    matcher = difflib.SequenceMatcher(None, a[pre:len(a) - suf], b[pre:len(b) - suf], autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        yield [(tag, i1 + pre, i2 + pre, j1 + pre, j2 + pre) for tag, i1, i2, j1, j2 in group]


def _header(group) -> str:
    i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
    return f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@\n"


def _nl(line: str) -> str:
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"


def line_diff(old: str, new: str, *, old_name: str, new_name: str, context: int = 3) -> Iterator[str]:
    a, b = split_lines(old), split_lines(new)
    yield f"--- {old_name}\n+++ {new_name}\n"
    for group in _hunks(a, b, context):
        out = [_header(group)]
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(" " + _nl(line) for line in a[i1:i2])
                continue
            out.extend("-" + _nl(line) for line in a[i1:i2])
            out.extend("+" + _nl(line) for line in b[j1:j2])
        yield "".join(out)


def _word_diff(old: str, new: str) -> str:
    a, b = WORD.findall(old), WORD.findall(new)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append("".join(a[i1:i2]))
            continue
        if i2 > i1:
            out.append("[-" + "".join(a[i1:i2]) + "-]")
        if j2 > j1:
            out.append("{+" + "".join(b[j1:j2]) + "+}")
    return "".join(out)


def word_diff(old: str, new: str, *, old_name: str, new_name: str, context: int = 3) -> Iterator[str]:
    """git --word-diff=plain style: [-removed-]{+added+} inside each hunk."""
    a, b = split_lines(old), split_lines(new)
    yield f"--- {old_name}\n+++ {new_name}\n"
    for group in _hunks(a, b, context):
        out = [_header(group)]
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.append("".join(a[i1:i2]))
            else:
                out.append(_word_diff("".join(a[i1:i2]), "".join(b[j1:j2])))
        yield "".join(out)
