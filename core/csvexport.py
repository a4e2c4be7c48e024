"""CSV for spreadsheets: a text cell that starts like a formula (=, +, -, @, tab or
carriage return) is written with a leading single quote, so Excel, LibreOffice
and Google Sheets show it as text instead of running it (OWASP, "CSV Injection").
Every CSV the app writes goes through `FormulaSafeWriter`."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def formula_safe(cell: Any) -> Any:
    """The cell as a spreadsheet should show it: text that starts like a
    formula gets a leading "'"; numbers and other text are unchanged."""
    if isinstance(cell, str) and cell.startswith(FORMULA_STARTS):
        return "'" + cell
    return cell


class FormulaSafeWriter:
    """csv.writer whose rows pass each cell through `formula_safe`."""

    def __init__(self, stream: Any, **fmtparams: Any) -> None:
        self._writer = csv.writer(stream, **fmtparams)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._writer.writerow([formula_safe(cell) for cell in row])
