"""The workbench in a real browser: the scratch playground (run before naming a
prompt, kept on the server, saved as a prompt), a conversation of several
roles, controls drawn from the model cards, template warnings, and side-by-side
columns streaming at once with their figures and a column saved as a version."""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot
from tests.e2e.test_playground_ui import save, sign_up

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]


def test_should_run_a_scratch_conversation_and_save_it_as_a_prompt(live_url, new_page, console_errors):
    page = new_page()
    sign_up(page, live_url)
    page.get_by_role("link", name="Playground", exact=True).click()
    page.wait_for_url(f"{live_url}/playground/")
    expect(page.locator("#version-badge")).to_have_text("scratch")
    # Controls come from the model card: bounds and default are the server's.
    expect(page.locator("#max-tokens")).to_have_attribute("max", "32768")
    expect(page.locator("#model-price")).to_contain_text("per million")

    page.fill("#system-input", "Answer like {{persona}}.")
    page.keyboard.press("Control+m")
    page.get_by_label("Content of message 1").fill("What is 2+2?")
    page.get_by_role("button", name="+ Add message").click()
    page.get_by_label("Role of message 2").select_option("assistant")
    page.get_by_label("Content of message 2").fill("4")
    page.fill("#body-input", "And {{ 1x }} for {{item}}?")
    expect(page.locator("#var-warnings [data-kind=malformed]")).to_contain_text("{{ 1x }}")
    page.fill("[data-var=persona]", "a pirate")
    page.fill("[data-var=item]", "rum")
    page.get_by_label("Move up").nth(1).click()  # the assistant turn first
    expect(page.get_by_label("Role of message 1")).to_have_value("assistant")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#output")).to_have_text("?mur rof }} x1 {{ dnA", timeout=15_000)
    expect(page.locator("#runs-body tr")).to_have_count(1)
    expect(page.locator("#draft-note")).to_have_text("Scratch kept for you")
    screenshot(page, "scratch-playground")

    # The scratch is kept on the server: a reload (or another browser) gets it back.
    page.reload()
    expect(page.get_by_label("Content of message 1")).to_have_value("4")
    expect(page.get_by_label("Content of message 2")).to_have_value("What is 2+2?")
    expect(page.locator("[data-var=persona]")).to_have_value("a pirate")
    expect(page.locator("#runs-body tr")).to_have_count(1)

    page.fill("#prompt-title", "Pirate maths")
    page.click("#save-btn")
    page.wait_for_url(re.compile(r"/prompts/[0-9a-f-]{36}/\?v="))
    expect(page.locator("h1")).to_contain_text("Pirate maths")
    expect(page.locator("#version-badge")).to_have_text("v1")
    expect(page.get_by_label("Role of message 1")).to_have_value("assistant")
    expect(page.locator("#dirty-badge")).to_be_hidden()
    page.fill("#body-input", "Changed {{item}}")
    expect(page.locator("#dirty-badge")).to_be_visible()
    assert console_errors == []


def test_should_run_columns_side_by_side_and_save_one_as_a_version(live_url, new_page, console_errors):
    page = new_page(width=1440)
    sign_up(page, live_url)
    page.goto(f"{live_url}/prompts/")
    page.fill("#id_title", "Columns")
    page.click("button:has-text('Create prompt')")
    page.fill("#body-input", "first {{who}}")
    page.fill("[data-var=who]", "Ada")
    save(page, "one", 1)
    page.fill("#body-input", "second {{who}}")
    page.click("#compare-add")
    page.click("#compare-add")
    page.click("#compare-add")
    cols = page.locator(".compare-col")
    expect(cols).to_have_count(3)
    cols.nth(1).get_by_label("Source").select_option(label="v1 one")
    expect(page.locator("#compare-estimate")).to_contain_text("3 runs: at most $")
    cols.nth(2).get_by_label("Remove column").click()
    expect(cols).to_have_count(2)
    page.click("#compare-run")
    expect(cols.nth(0).locator("pre")).to_have_text("adA dnoces", timeout=15_000)
    expect(cols.nth(1).locator("pre")).to_have_text("adA tsrif", timeout=15_000)
    for i in range(2):
        expect(cols.nth(i).locator(".col-stats")).to_contain_text("cost $")
        expect(cols.nth(i).locator(".col-stats")).to_contain_text("latency")
    screenshot(page, "side-by-side")
    expect(page.locator("#runs-body tr")).to_have_count(2)  # both columns are in the history
    cols.nth(0).get_by_role("button", name="Save as version").click()
    expect(cols.nth(0).get_by_role("button", name="Saved as v2")).to_be_visible()
    expect(page.locator("#version-badge")).to_have_text("v2")
    assert console_errors == []
