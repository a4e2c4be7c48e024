"""Merging two branches on the history page in a real browser: conflicts side
by side, one resolved per click, the merge saved and drawn as a join."""

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot
from tests.e2e.test_playground_ui import create_prompt, sign_up

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]

MAKE_VERSION = """async ([prompt, body, parent]) => {
    const csrf = document.cookie.match(/csrftoken=([^;]+)/)[1];
    const res = await fetch(`/api/prompts/${prompt}/versions`, {method: 'POST', credentials: 'same-origin',
        headers: {'Content-Type': 'application/json', 'X-CSRFToken': csrf},
        body: JSON.stringify({body, parent, model: 'fixed-cost', message: body.split('\\n')[0]})});
    return (await res.json()).id;
}"""


def test_should_resolve_a_conflict_side_by_side_and_save_the_merge_as_a_join(live_url, new_page,
                                                                              console_errors):
    page = new_page()
    sign_up(page, live_url)
    prompt = create_prompt(page, live_url, "Merger")
    base = page.evaluate(MAKE_VERSION, [prompt, "hello\nmiddle\nend\n", None])
    page.evaluate(MAKE_VERSION, [prompt, "HELLO\nmiddle\nend\n", base])  # v2
    page.evaluate(MAKE_VERSION, [prompt, "howdy\nmiddle\nEND\n", base])  # v3
    page.goto(f"{live_url}/prompts/{prompt}/history/")
    expect(page.locator("svg.tree g.node")).to_have_count(3)
    page.select_option("#diff-from", label=page.locator("#diff-from option").nth(1).text_content())
    page.select_option("#diff-to", label=page.locator("#diff-to option").nth(2).text_content())
    page.click("#merge-btn")
    expect(page.locator("#merge-summary")).to_contain_text("1 conflict(s), 1 left to resolve")
    conflict = page.locator(".merge-conflict")
    expect(conflict.locator(".merge-side")).to_have_count(2)
    expect(conflict.locator(".merge-side").nth(0)).to_contain_text("HELLO")
    expect(conflict.locator(".merge-side").nth(1)).to_contain_text("howdy")
    expect(page.locator("#merge-save")).to_be_disabled()
    screenshot(page, "merge-conflict")
    conflict.locator("button", has_text="Use this").nth(1).click()
    expect(page.locator("#merge-summary")).to_contain_text("0 left to resolve")
    page.click("#merge-save")
    expect(page.locator("#merge-done")).to_have_text("Saved as v4.")
    expect(page.locator("svg.tree path.edge.merge")).to_have_count(1)
    expect(page.locator("#version-view")).to_contain_text("merge of v3 into v2")
    expect(page.locator("#version-view pre.ro-text").last).to_have_text("howdy\nmiddle\nEND\n")
    assert console_errors == []
