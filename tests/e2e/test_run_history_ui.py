"""The playground's Runs panel in a real browser: a run is kept, listed after a
reload, restored into the editor, and opened by its permalink."""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot
from tests.e2e.test_playground_ui import create_prompt, save, sign_up

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]


def test_should_list_a_run_after_reload_restore_it_and_open_its_permalink(live_url, new_page, console_errors):
    page = new_page()
    sign_up(page, live_url)
    prompt_id = create_prompt(page, live_url, "Runs")
    expect(page.locator("#runs-empty")).to_be_visible()
    expect(page.locator("#run-case-form")).to_be_hidden()  # hidden until asked for
    page.fill("#body-input", "Say {{word}} now")
    page.fill("[data-var=word]", "hello")
    page.select_option("#model-select", "fixed-cost")
    save(page, "first", 1)
    page.locator("#max-tokens").fill("77")
    page.click("#run-btn")
    expect(page.locator("#output")).to_have_text("won olleh yaS", timeout=15_000)
    expect(page.locator("#runs-body tr")).to_have_count(1)

    page.reload()
    row = page.locator("#runs-body tr").first
    expect(row).to_contain_text("v1")
    expect(row).to_contain_text("ok")
    expect(row.locator("td.first-line")).to_have_text("won olleh yaS")
    expect(page.locator("#runs-empty")).to_be_hidden()
    page.evaluate("""async () => {
        const csrf = document.cookie.match(/csrftoken=([^;]+)/)[1];
        await fetch('/api/datasets/', {method: 'POST', credentials: 'same-origin',
            headers: {'Content-Type': 'application/json', 'X-CSRFToken': csrf},
            body: JSON.stringify({name: 'greetings'})});
    }""")
    row.get_by_role("button", name="Save as test case").click()
    expect(page.locator("#run-case-form")).to_be_visible()
    expect(page.locator("#run-case-dataset option")).to_have_text("greetings")
    screenshot(page, "run-history")
    page.locator("#run-case-form").get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#runs-status")).to_have_text("Saved as row 1 of dataset version 1.")
    expect(page.locator("#run-case-form")).to_be_hidden()

    # Change the editor, then Restore puts the run's state back.
    page.fill("#body-input", "Something else {{x}}")
    page.locator("#max-tokens").fill("5")
    row.get_by_role("button", name="Restore").click()
    expect(page.locator("#body-input")).to_have_value("Say {{word}} now")
    expect(page.locator("[data-var=word]")).to_have_value("hello")
    expect(page.locator("#max-tokens")).to_have_value("77")
    expect(page.locator("#output")).to_have_text("won olleh yaS")

    # The permalink opens the run on its prompt's page.
    run_id = row.get_attribute("data-run")
    page.goto(f"{live_url}/runs/{run_id}/")
    page.wait_for_url(re.compile(rf"/prompts/{prompt_id}/"))
    expect(page.locator("#output")).to_have_text("won olleh yaS")
    expect(page.locator("#max-tokens")).to_have_value("77")
    expect(page.locator("#stat-finish")).to_contain_text("ok")

    assert console_errors == []

    # Someone else gets a 404 for the same link.
    other = new_page()
    sign_up(other, live_url)
    assert other.goto(f"{live_url}/runs/{run_id}/").status == 404
