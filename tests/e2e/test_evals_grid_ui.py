"""The dataset page's grid in a real browser: rows typed in, edited, deleted and
undone, saved as versions; spreadsheet cells pasted with a ragged row (listed,
the rest saved); the format guide's sample; the evaluator picker with nothing
picked; a run with repeats, then deleted from its page."""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot
from tests.e2e.test_evals_ui import call
from tests.e2e.test_playground_ui import sign_up

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]

PASTED = "q\texpected\nxyz\tzyx\nthree\tcells\there\nhi\tih\n"


def cell(page, row: int, col: str):
    return page.locator("#rows tbody tr").nth(row).locator(f"td[data-col='{col}']")


def type_into(page, row: int, col: str, text: str):
    cell(page, row, col).click()
    page.keyboard.press("Control+A")
    page.keyboard.type(text)
    page.keyboard.press("Enter")  # keeps the value


def test_should_type_edit_undo_paste_and_delete_in_the_dataset_grid(live_url, new_page, console_errors):
    page = new_page()
    sign_up(page, live_url)
    prompt = call(page, "POST", "/api/prompts/", {"title": "Reverser"})["body"]
    call(page, "POST", f"/api/prompts/{prompt['id']}/versions", {"body": "{{q}}", "model": "fixed-cost"})
    page.goto(f"{live_url}/evals/")
    page.fill("#dataset-name", "Typed")
    page.click("button:has-text('Create dataset')")
    page.wait_for_url(re.compile(r"/evals/datasets/[0-9a-f-]{36}/$"))
    dataset_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    expect(page.locator("#rows-more")).to_have_text("No rows yet: add a row, or paste or import some.")
    expect(page.locator("#format-guide")).to_contain_text("expected")
    sample = page.request.get(live_url + page.get_attribute("#sample-csv", "href"))
    assert sample.ok and sample.text().startswith("question,expected")

    # Typed in: a variable, two rows; an edit undone.
    page.fill("#grid-col-name", "q")
    page.click("#grid-add-col button")
    page.click("#grid-add-row")
    type_into(page, 0, "q", "abc")
    type_into(page, 0, "expected", "cba")
    page.click("#grid-add-row")
    type_into(page, 1, "q", "hello")
    type_into(page, 1, "expected", "oops")
    page.click("#grid-undo")
    expect(cell(page, 1, "expected")).to_have_text("")
    type_into(page, 1, "expected", "olleh")
    expect(page.locator("#grid-pending")).to_have_text("2 unsaved rows")
    screenshot(page, "evals-grid-typed")
    page.click("#grid-save")
    expect(page.locator("#grid-summary")).to_have_text("Saved as version 1.")
    expect(page.locator("#rows tbody tr")).to_have_count(2)
    expect(cell(page, 0, "q")).to_have_text("abc")

    # Edited and deleted in place; a delete undone, then done again; saved as version 2.
    type_into(page, 0, "expected", "CBA")
    row2 = page.locator("#rows tbody tr").nth(1)
    row2.locator(".ev-row-delete").click()
    expect(row2).to_have_class(re.compile("deleted"))
    page.click("#grid-undo")
    expect(row2).not_to_have_class(re.compile("deleted"))
    row2.locator(".ev-row-delete").click()
    screenshot(page, "evals-grid-edited")
    page.click("#grid-save")
    expect(page.locator("#grid-summary")).to_have_text("Saved as version 2.")
    expect(page.locator("#rows tbody tr")).to_have_count(1)
    expect(cell(page, 0, "expected")).to_have_text("CBA")

    # Cells pasted from a spreadsheet into the grid: the ragged row is listed, the rest saved.
    page.evaluate("""(text) => {
        const data = new DataTransfer();
        data.setData('text/plain', text);
        document.querySelector('#rows tbody td[data-col]').dispatchEvent(
            new ClipboardEvent('paste', {clipboardData: data, bubbles: true, cancelable: true}));
    }""", PASTED)
    expect(page.locator("#grid-summary")).to_have_text("Pasted 2 rows as version 3; 1 not saved:")
    expect(page.locator("#grid-report .import-error")).to_have_text(
        ["Pasted row 2: The row has 3 fields; the header has 2."])
    expect(page.locator("#rows tbody tr")).to_have_count(3)
    expect(cell(page, 2, "q")).to_have_text("hi")
    screenshot(page, "evals-grid-pasted")
    rows = call(page, "GET", f"/api/datasets/{dataset_id}/versions", None)["body"]["results"]
    assert [(v["number"], v["row_count"]) for v in rows] == [(3, 3), (2, 1), (1, 2)]

    # The picker explains each evaluator and picks none; a run with exact, then deleted.
    expect(page.locator("#evaluator-boxes input:checked")).to_have_count(0)
    expect(page.locator("#evaluator-note")).to_have_text(
        "No evaluator picked: the run stores each output and scores nothing.")
    expect(page.locator(".ev-pick[data-evaluator='tool_calls'] .ev-doc")).to_contain_text("tool calls")
    page.check("#ev-exact")
    expect(page.locator("#evaluator-note")).to_have_text("Scored by exact.")
    screenshot(page, "evals-grid-picker")
    page.select_option("#col-prompt", prompt["id"])
    page.click("#col-add")
    page.fill("#run-repeats", "2")  # each row twice: the run shows how much a score moves
    page.click("#run-start")
    page.wait_for_url(re.compile(r"/evals/runs/[0-9a-f-]{36}/$"))
    expect(page.locator("#run-status")).to_have_text("done", timeout=20_000)
    expect(page.locator("#run-counts")).to_have_text("6 / 6 cells")
    mean = page.locator("#agg-table tbody tr[data-column='0'] td.ev-mean")
    expect(mean).to_have_text(re.compile(r"^0\.67 \["))
    expect(page.locator("#agg-table td.ev-spread")).to_have_text("sd 0.00 (max 0.00) · 0 unstable rows")
    expect(page.locator("#grid tbody tr").nth(1).locator(".ev-repeats")).to_have_text(
        "2 repeats: 2 passed · exact 1.00 ± 0.00")
    screenshot(page, "evals-grid-run")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#run-delete")
    page.wait_for_url(f"{live_url}/evals/datasets/{dataset_id}/")
    expect(page.locator("#dataset-runs")).to_have_text("No runs yet.")
    assert not console_errors


def test_a_pinned_dataset_runs_each_saved_version_and_history_shows_the_deltas(live_url, new_page,
                                                                              console_errors):
    page = new_page()
    sign_up(page, live_url)
    prompt = call(page, "POST", "/api/prompts/", {"title": "Pinned"})["body"]
    base = f"/api/prompts/{prompt['id']}"
    v1 = call(page, "POST", f"{base}/versions", {"body": "{{q}}", "model": "fixed-cost"})["body"]
    rows = [{"variables": {"q": "abc"}, "expected": "cba"}, {"variables": {"q": "ab"}, "expected": "ba"}]
    dataset = call(page, "POST", "/api/datasets/", {"name": "Pins", "rows": rows})["body"]
    page.goto(f"{live_url}/evals/datasets/{dataset['id']}/")
    page.select_option("#col-prompt", prompt["id"])
    page.check("#ev-exact")
    page.click("#pin-go")
    expect(page.locator("#pin-summary")).to_have_text("Pinned: each version saved on Pinned now runs over "
                                                      "this dataset beside its parent, scored by exact. ")
    screenshot(page, "evals-pinned-dataset")
    page.reload()  # the page shows the pin it finds
    expect(page.locator("#pin-summary")).to_contain_text("scored by exact")
    # A save: the run starts on its own; the history page shows v2 against v1 beside the diff.
    call(page, "POST", f"{base}/versions", {"body": "{{q}}!", "model": "fixed-cost", "parent": v1["id"]})
    page.goto(f"{live_url}/prompts/{prompt['id']}/history/")
    expect(page.locator("#eval-deltas li[data-evaluator='exact']")).to_have_text(
        "exact: 1.00 → 0.00 (−1.00)", timeout=20_000)
    expect(page.locator("#eval-deltas a")).to_have_text("Pins v1")
    page.click("#diff-btn")
    screenshot(page, "evals-pinned-deltas")
    assert not console_errors
