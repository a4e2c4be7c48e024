"""Evaluations in a real browser against a live server (the in-process worker,
the fixed-cost engine: the answer is the input reversed): import a CSV with a
bad row, run two versions over it, read the grid and the chart, and have the
gate refuse a label move, in the page and from a CI curl line."""

import json
import re
import subprocess

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import _server_env, screenshot
from tests.e2e.test_playground_ui import create_api_key, open_node, sign_up
from tests.livesubprocess import free_port, running_server

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]


@pytest.fixture(scope="module")
def live_url(django_db_setup, django_db_blocker, tmp_path_factory):
    """The e2e server, with uploads over 20 kB imported in the background (the progress bar's path)."""
    port = free_port()
    env = {**_server_env(tmp_path_factory.mktemp("e2e-var")), "EVAL_IMPORT_BACKGROUND_BYTES": "20000"}
    args = ["-m", "uvicorn", "config.asgi:application", "--port", str(port), "--lifespan", "off"]
    with running_server(args, env, port) as server:
        yield server.base


CSV = b"q,expected\nabc,cba\nhello,olleh\nbroken\nxyz,zyx\n"


def call(page, method, path, body=None):
    return page.evaluate(
        """async ([method, path, body]) => {
        const csrf = document.cookie.match(/csrftoken=([^;]+)/)[1];
        const res = await fetch(path, {method, credentials: 'same-origin',
            headers: {'Content-Type': 'application/json', 'X-CSRFToken': csrf},
            body: body === null ? undefined : JSON.stringify(body)});
        return {status: res.status, body: await res.json()};
    }""",
        [method, path, body],
    )


def test_should_import_run_two_versions_compare_and_gate_a_label(live_url, new_page, console_errors):
    page = new_page()
    sign_up(page, live_url)
    prompt = call(page, "POST", "/api/prompts/", {"title": "Reverser"})["body"]
    base = f"/api/prompts/{prompt['id']}"
    v1 = call(page, "POST", f"{base}/versions", {"body": "{{q}}", "model": "fixed-cost", "message": "plain"})[
        "body"
    ]
    v2 = call(
        page,
        "POST",
        f"{base}/versions",
        {"body": "{{q}}!", "model": "fixed-cost", "message": "bang", "parent": v1["id"]},
    )["body"]
    assert (
        call(page, "POST", f"{base}/labels/production/move", {"version": v1["id"], "expected": None})[
            "status"
        ]
        == 200
    )

    # A dataset from the list page, rows from a CSV with one ragged row.
    page.goto(f"{live_url}/evals/")
    page.fill("#dataset-name", "Reverse")
    page.click("button:has-text('Create dataset')")
    page.wait_for_url(re.compile(r"/evals/datasets/[0-9a-f-]{36}/$"))
    dataset_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    page.set_input_files("#import-file", {"name": "cases.csv", "mimeType": "text/csv", "buffer": CSV})
    page.click("#import-preview")
    expect(page.locator("#import-summary")).to_have_text("3 rows are valid, 1 have errors.")
    expect(page.locator(".import-error")).to_have_text(["Line 4: The row has 1 fields; the header has 2."])
    page.click("#import-go")
    expect(page.locator("#import-summary")).to_have_text(
        "Imported 3 rows as version 1; skipped 1 with errors."
    )
    expect(page.locator("#rows tbody tr")).to_have_count(3)

    # Shared by link from the dialog prompts use; a signed-out visitor opens it and reads the rows.
    page.click("#share-open")
    expect(page.locator("#share-version")).to_have_count(0)  # a dataset's links read every version
    page.click("#share-link-create")
    expect(page.locator("#share-url")).to_have_value(re.compile(r"/s/pys_"))
    url = page.input_value("#share-url")
    expect(page.locator("#share-links li[data-state='active']")).to_have_count(1)
    page.click("#share-close")
    visitor = new_page()
    visitor.goto(url)
    expect(visitor.locator("#shared-rows tbody tr")).to_have_count(3)

    # Two columns, the default evaluator (exact), start: the run page follows it live.
    page.select_option("#col-prompt", prompt["id"])
    for version in (v1, v2):
        page.select_option("#col-version", version["id"])
        page.click("#col-add")
    expect(page.locator("#columns li")).to_have_count(2)
    # 3 rows x 2 columns, priced and timed before the run starts.
    estimate = re.compile(r"Estimate: 6 runs: (at most \$|cost not)")
    expect(page.locator("#run-estimate")).to_contain_text(estimate)
    page.click("#run-start")
    page.wait_for_url(re.compile(r"/evals/runs/[0-9a-f-]{36}/$"))
    run_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    expect(page.locator("#run-status")).to_have_text("done", timeout=20_000)
    expect(page.locator("#run-counts")).to_have_text("6 / 6 cells")
    expect(page.locator("#grid tbody tr")).to_have_count(3)
    first = page.locator("#grid tbody tr").first
    expect(first.locator("td").nth(3)).to_contain_text("cba")
    # The word diff against the first column: "cba" became "!cba".
    expect(first.locator("td").nth(4).locator("del")).to_have_text("cba")
    expect(first.locator("td").nth(4).locator("ins")).to_have_text("!cba")
    expect(first.locator("td.pass")).to_have_count(1)
    expect(first.locator("td").nth(3).locator(".ev-served")).to_have_text("fixed-cost")  # what served it
    served_by = page.locator("#agg-table tbody tr[data-column='0'] td.ev-served-by")
    expect(served_by).to_have_text("fixed-cost (3)")
    expect(page.locator("#agg-table tbody tr[data-column='0'] td.ev-mean")).to_have_text(
        re.compile(r"^1\.00 \[")
    )
    expect(page.locator("#agg-table tbody tr[data-column='1'] td.ev-mean")).to_have_text("0.00 [0.00, 0.00]")
    expect(page.locator("#chart rect.bar")).to_have_count(20)  # 10 bins x 2 columns
    page.select_option("#grid-filter", "disagree")
    expect(page.locator("#grid tbody tr")).to_have_count(3)
    screenshot(page, "eval-run")

    # The gate: production needs the candidate within 0.1 of the current version on this dataset.
    gate = call(
        page,
        "PUT",
        f"{base}/labels/production/gate",
        {"dataset": dataset_id, "evaluator": "exact", "margin": 0.1},
    )
    assert gate["status"] == 200
    page.goto(f"{live_url}/prompts/{prompt['id']}/history/")
    open_node(page, 2)
    page.fill("#label-eval", run_id)
    page.click("#label-move")
    expect(page.locator("#label-status")).to_contain_text("Refused by the gate")
    expect(page.locator("#gate-run-link")).to_have_attribute("href", f"/evals/runs/{run_id}/")
    expect(page.locator("#gate-decisions li").first).to_contain_text("eval_regression")

    # From CI: the documented curl line fails the job on the regression.
    key = create_api_key(page)
    curl = subprocess.run(
        [
            "curl",
            "-sS",
            "--fail-with-body",
            "-X",
            "POST",
            f"{live_url}{base}/labels/production/move?require_eval={run_id}",
            "-H",
            f"Authorization: Bearer {key}",
            "-H",
            "Content-Type: application/json",
            "-d",
            json.dumps({"version": v2["id"], "expected": v1["id"]}),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert curl.returncode == 22
    assert json.loads(curl.stdout)["error"]["code"] == "eval_regression"
    assert call(page, "GET", f"{base}/labels/production")["body"]["version"]["id"] == v1["id"]
    # "Save as test case" from a playground run: a new dataset version with the row.
    page.goto(f"{live_url}/prompts/{prompt['id']}/")
    page.fill("[data-var=q]", "zz")
    page.click("#run-btn")
    expect(page.locator("#output")).to_have_text("!zz", timeout=15_000)
    page.select_option("#case-dataset", dataset_id)
    page.click("#case-save")
    expect(page.locator("#case-status")).to_have_text("Saved as row 4 of version 2.")
    saved = call(page, "GET", f"/api/datasets/{dataset_id}/versions", None)["body"]["results"][0]
    rows = call(page, "GET", f"/api/datasets/{dataset_id}/versions/{saved['id']}/rows?start=3", None)["body"]
    assert rows["rows"][0]["variables"] == {"q": "zz"} and rows["rows"][0]["expected"] == "!zz"

    # A large file imports in the background behind a progress bar.
    page.goto(f"{live_url}/evals/datasets/{dataset_id}/")
    big = "q,expected\n" + "".join(f"q{i},{i}\n" for i in range(3000))
    page.set_input_files("#import-file", {"name": "big.csv", "mimeType": "text/csv", "buffer": big.encode()})
    page.click("#import-go")
    expect(page.locator("#import-summary")).to_have_text(
        "Imported 3000 rows as version 3 in the background.", timeout=20_000
    )
    expect(page.locator("#row-count")).to_have_text("(3004)")

    # The one console error is the browser's note of the refused move (a 409 the page explains).
    assert [e for e in console_errors if "409 (Conflict)" not in e] == [] and len(console_errors) == 1
