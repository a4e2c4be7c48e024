"""A prompt's history exported from its page and imported from the prompt list, in Chromium."""

import json
import re

import pytest
from playwright.sync_api import expect

from tests.e2e.test_playground_ui import create_prompt, save, sign_up

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]


def test_should_export_a_history_and_import_it_as_a_new_prompt(live_url, new_page, console_errors, tmp_path):
    page = new_page()
    sign_up(page, live_url)
    source = create_prompt(page, live_url, "Round trip")
    page.fill("#body-input", "Hello {{name}}")
    save(page, "first", 1)
    page.fill("#body-input", "Hello again {{name}}")
    save(page, "second", 2)

    with page.expect_download() as download:
        page.click("#history-export")
    assert download.value.suggested_filename == "round-trip.promptyard.json"
    path = tmp_path / "history.json"
    download.value.save_as(path)
    document = json.loads(path.read_text())
    assert document["format"] == "promptyard.prompt-history"
    assert [(v["number"], v["parent"], v["body"]) for v in document["versions"]] == [
        (1, None, "Hello {{name}}"), (2, 1, "Hello again {{name}}")]

    page.goto(f"{live_url}/prompts/")
    page.set_input_files("#import-file", str(path))
    page.wait_for_url(lambda url: re.search(r"/prompts/[0-9a-f-]{36}/$", url) and source not in url)
    expect(page.locator("h1")).to_contain_text("Round trip")
    page.goto(f"{live_url}/prompts/")
    expect(page.locator(".prompt-card", has_text="Round trip")).to_have_count(2)

    # A file that is not a history is refused on the page, with the server's reason.
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**document, "format_version": 99}))
    page.set_input_files("#import-file", str(bad))
    expect(page.locator("#import-error")).to_contain_text("format_version")
    # The browser logs the refused request itself; nothing else went wrong.
    assert [e for e in console_errors if "status of 400" not in e] == []
