"""The history page's Compare view in a real browser: the parameters table,
each message's diff, the tools' JSON changes; unchanged sections collapsed; a
body diff too long to carry inline streamed into its place."""

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot
from tests.e2e.test_playground_ui import create_prompt, sign_up

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]

MAKE_VERSION = """async ([prompt, fields]) => {
    const csrf = document.cookie.match(/csrftoken=([^;]+)/)[1];
    const res = await fetch(`/api/prompts/${prompt}/versions`, {method: 'POST', credentials: 'same-origin',
        headers: {'Content-Type': 'application/json', 'X-CSRFToken': csrf},
        body: JSON.stringify({model: 'fixed-cost', ...fields})});
    if (!res.ok) throw new Error(await res.text());
    return (await res.json()).id;
}"""

TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Weather now",
                                         "parameters": {"type": "object", "properties": {}}}}
TURNS = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"}]
LONG = "".join(f"line {i} of a long body that every version rewrites\n" for i in range(12_000))  # ~600 KB


def test_should_show_parameters_messages_and_tools_changes_collapsing_the_rest(live_url, new_page,
                                                                               console_errors):
    page = new_page()
    sign_up(page, live_url)
    prompt = create_prompt(page, live_url, "Differ")
    v1 = page.evaluate(MAKE_VERSION, [prompt, {
        "message": "first", "system": "You are terse.", "messages": TURNS, "tools": [TOOL],
        "temperature": 0.2, "variables": {"city": "Oslo"}, "body": "Weather in {{city}}?\n"}])
    changed_tool = {**TOOL, "function": {**TOOL["function"], "description": "Weather tomorrow"}}
    v2 = page.evaluate(MAKE_VERSION, [prompt, {
        "parent": v1, "message": "second", "system": "You are terse.", "tools": [changed_tool],
        "messages": [TURNS[0], {"role": "user", "content": "And tomorrow?"}, TURNS[1]], "temperature": 0.7,
        "variables": {"city": "Bergen"}, "body": "Weather in {{city}} today?\n"}])
    page.goto(f"{live_url}/prompts/{prompt}/history/")
    expect(page.locator("svg.tree g.node")).to_have_count(2)
    page.select_option("#diff-from", v1)
    page.select_option("#diff-to", v2)
    page.click("#diff-btn")

    expect(page.locator("#diff-summary")).to_have_text(
        "v1 → v2 changes 2 parameters (temperature, variables.city), 2 messages, the tools.")
    changed_rows = page.locator("#diff-fields tr.changed")
    expect(changed_rows).to_have_count(2)
    expect(page.locator('#diff-fields tr[data-field="temperature"] td')).to_have_text(["0.2", "0.7"])
    # The system text did not change: one collapsed line.
    expect(page.locator("#diff-system")).to_have_attribute("data-status", "same")
    expect(page.locator("#diff-system")).not_to_have_attribute("open", "")
    expect(page.locator("#diff-system .diff-badge")).to_have_text("unchanged")
    page.click("#diff-system summary")  # opened: what both hold
    expect(page.locator("#diff-system pre")).to_have_text("You are terse.")
    added = page.locator("#diff-turn-2")
    expect(added).to_have_attribute("data-status", "added")
    expect(added.locator("summary")).to_contain_text("Message 2 · user")
    expect(added.locator(".cell.add")).to_contain_text("And tomorrow?")
    expect(page.locator("#diff-body ins", has_text="today")).to_have_count(1)
    tools = page.locator("#diff-tools")
    expect(tools.locator("tbody tr")).to_have_count(1)
    expect(tools.locator("tbody td")).to_have_text(
        ["changed", "/0/function/description", '"Weather now"', '"Weather tomorrow"'])
    expect(page.locator("#diff-schema")).not_to_have_attribute("open", "")
    page.click("#diff-schema summary")
    expect(page.locator("#diff-schema pre")).to_have_text("(none)")
    screenshot(page, "diff-fields")

    # A body rewritten line by line: its diff is longer than the inline allowance, so it streams.
    v3 = page.evaluate(MAKE_VERSION, [prompt, {"parent": v2, "message": "long", "body": LONG}])
    v4 = page.evaluate(MAKE_VERSION, [prompt, {"parent": v3, "message": "longer", "body": LONG.upper()}])
    page.reload()
    expect(page.locator("svg.tree g.node")).to_have_count(4)
    page.select_option("#diff-from", v3)
    page.select_option("#diff-to", v4)
    page.click("#diff-btn")
    expect(page.locator("#diff-summary")).to_contain_text("v3 → v4 changes 1 message.")
    last = page.locator("#diff-body .cell.add").last
    expect(last).to_contain_text("LINE 11999 OF A LONG BODY", timeout=30_000)
    assert console_errors == []
