"""The history page's Labels panel in a real browser: the owner protects a label
and gates it, a move the gate refuses says why, a review request goes to another
editor who starts a run, picks it and approves (the label moves, all audited),
an editor's refused delete and a delete; a viewer reads it all read-only."""

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot
from tests.e2e.test_evals_ui import call
from tests.e2e.test_playground_ui import open_node, sign_up

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]

# The fixed-cost engine answers the last message reversed: "{{q}}" scores 1 on exact, "{{q}}!" 0.
ROWS = [{"variables": {"q": q}, "expected": q[::-1]} for q in ("abc", "hello")]


def _label_row(page, name):
    return page.locator(f"#labels-table tr[data-label='{name}']")


def test_should_protect_gate_refuse_review_approve_and_delete_labels(live_url, new_page, console_errors):
    owner = new_page()
    sign_up(owner, live_url)
    prompt = call(owner, "POST", "/api/prompts/", {"title": "Reverser"})["body"]
    base = f"/api/prompts/{prompt['id']}"
    versions = []
    for system, body in (("", "{{q}}"), ("Reverse it.", "{{q}}"), ("", "{{q}}!")):
        parent = {"parent": versions[-1]["id"]} if versions else {}
        versions.append(call(owner, "POST", f"{base}/versions", {
            "system": system, "body": body, "model": "fixed-cost", "message": body, **parent})["body"])
    for name in ("production", "staging"):
        assert call(owner, "POST", f"{base}/labels/{name}/move",
                    {"version": versions[0]["id"], "expected": None})["status"] == 200
    dataset = call(owner, "POST", "/api/datasets/", {"name": "reverse", "rows": ROWS})["body"]
    editor = new_page()
    editor_name = sign_up(editor, live_url)
    assert call(owner, "POST", f"{base}/grants", {"username": editor_name, "role": "editor"})["status"] == 201
    assert call(owner, "POST", f"/api/datasets/{dataset['id']}/grants",
                {"username": editor_name, "role": "viewer"})["status"] == 201

    # The owner protects production (moves need approval) and gates it on the dataset.
    owner.goto(f"{live_url}/prompts/{prompt['id']}/history/")
    production = _label_row(owner, "production")
    expect(production.locator(".label-version")).to_have_text("v1")
    production.locator("select.label-protect").select_option("approval")
    expect(owner.locator("#label-status")).to_have_text("production: protection changed.")
    expect(_label_row(owner, "production").locator("select.label-protect")).to_have_value("approval")
    _label_row(owner, "production").locator("button.label-gate").click()
    owner.select_option("#gate-dataset", dataset["id"])
    owner.fill("#gate-evaluator", "exact")
    owner.click("#gate-save")
    gate = _label_row(owner, "production").locator(".label-gate-text")
    expect(gate).to_have_text("reverse · exact · margin 0")

    # A move without a passing run: refused, the gate's reason and code beside the form.
    open_node(owner, 3)
    owner.fill("#label-name", "production")
    owner.click("#label-move")
    expect(owner.locator("#label-status")).to_contain_text("Refused by the gate")
    expect(owner.locator("#label-status")).to_contain_text("(eval_required)")
    screenshot(owner, "labels-refused")

    # A review request: production to v2, with a note; the requester cannot decide it.
    open_node(owner, 2)
    owner.fill("#review-note", "same answers, clearer message")
    owner.click("#review-request")
    review = owner.locator("#reviews-table tr[data-status='pending']")
    expect(review.locator(".review-note")).to_have_text("same answers, clearer message")
    expect(review.locator(".review-status")).to_have_text("pending · awaiting another editor")
    expect(owner.locator("#reviews-table tr.review-decide-row")).to_have_count(0)

    # The other editor starts a run of v2 from the request, waits for it, approves behind it.
    editor.goto(f"{live_url}/prompts/{prompt['id']}/history/")
    review = editor.locator("#reviews-table tr.review-decide-row")
    runs = review.locator("select.review-run option")
    expect(runs).to_have_text(["No run of v2 yet"])
    expect(_label_row(editor, "production").locator(".label-protection")).to_have_text(
        "needs approval")  # an editor reads the protection, the owner changes it
    review.locator("button.review-start").click()
    expect(runs.nth(1)).to_contain_text("✓ passes", timeout=20_000)
    screenshot(editor, "labels-review")
    review.locator("input.review-reason").fill("the run passes")
    review.locator("button.review-approve").click()
    expect(editor.locator("#reviews-table tr[data-status='approved'] .review-status")).to_have_text(
        f"approved by {editor_name}: the run passes")
    expect(_label_row(editor, "production").locator(".label-version")).to_have_text("v2")
    editor.click("#labels-table tr[data-history='production'] summary")
    moves = editor.locator("#labels-table tr[data-history='production'] ol.label-history li")
    expect(moves.first).to_contain_text(f"v1 → v2 · move · {editor_name}")

    # Deleting: production is protected (only the owner removes it); staging goes.
    editor.on("dialog", lambda dialog: dialog.accept())
    _label_row(editor, "production").locator("button.label-delete").click()
    expect(editor.locator("#label-status")).to_contain_text("only the owner may remove it. (label_protected)")
    _label_row(editor, "staging").locator("button.label-delete").click()
    expect(editor.locator("#label-status")).to_have_text("staging deleted.")
    expect(_label_row(editor, "staging")).to_have_count(0)
    screenshot(editor, "labels-after")

    # A viewer reads the labels, their history and the requests, and has nothing to act with.
    viewer = new_page(width=420)  # a phone: the panel scrolls its tables, not the page
    viewer_name = sign_up(viewer, live_url)
    assert call(owner, "POST", f"{base}/grants", {"username": viewer_name, "role": "viewer"})["status"] == 201
    viewer.goto(f"{live_url}/prompts/{prompt['id']}/history/")
    expect(_label_row(viewer, "production").locator(".label-version")).to_have_text("v2")
    expect(viewer.locator("#labels-role")).to_have_text("read-only (viewer)")
    expect(viewer.locator("#label-form")).to_be_hidden()
    controls = viewer.locator("#labels-table button, #labels-table select, #reviews-table button")
    expect(controls).to_have_count(0)
    assert viewer.locator("#labels-panel").evaluate("(panel) => panel.scrollWidth <= panel.clientWidth")
    screenshot(viewer, "labels-viewer-narrow")

    audit = [e["action"] for e in call(owner, "GET", f"{base}/audit")["body"]["results"]]
    for action in ("label.protect", "label.gate_set", "label.move_requested", "label.move",
                   "label.move_approved", "label.delete"):
        assert action in audit, (action, audit)
    # The browser notes each refusal the page explains (the 409 gate, the 403 delete).
    assert all("409 (Conflict)" in e or "403 (Forbidden)" in e for e in console_errors), console_errors
