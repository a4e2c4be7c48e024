"""The export dialog in a real browser; the code it shows runs for real."""

import os
import subprocess
import sys

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot
from tests.e2e.test_playground_ui import create_api_key, create_prompt, save, sign_up

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]


def test_should_export_the_saved_version_as_code_that_runs(live_url, new_page, console_errors, tmp_path):
    page = new_page()
    sign_up(page, live_url)
    create_prompt(page, live_url, "Exported")
    page.fill("#body-input", "Echo {{word}}: it's \"$HOME\" `here`")
    save(page, "first", 1)

    page.click("#export-open")
    dialog = page.locator("#export-dialog")
    expect(dialog).to_be_visible()
    expect(page.locator("#export-langs [role=tab]")).to_have_count(4)

    page.click("#export-langs [data-lang=curl]")
    expect(page.locator("#export-code")).to_contain_text("PROMPTYARD_API_KEY")
    expect(page.locator("#export-code")).to_contain_text("-d @- <<'JSON'")  # the short form, by default
    page.select_option("#export-form", "inline")
    expect(page.locator("#export-code")).to_contain_text("--data-binary @-")
    page.click("#export-langs [data-lang=python-httpx]")
    expect(page.locator("#export-code")).to_contain_text("def run_prompt(")
    expect(page.locator("#export-langs [data-lang=python-httpx]")).to_have_attribute("aria-selected", "true")
    code = page.locator("#export-code").text_content()
    assert "py_" not in code  # never a secret in the snippet
    page.click("#export-copy")
    expect(page.locator("#export-copy-status")).not_to_be_empty()
    screenshot(page, "export-dialog")

    # Run exactly what the dialog shows against the live server, with a real key.
    page.click("#export-close")
    expect(dialog).to_be_hidden()
    key = create_api_key(page)
    env = dict(os.environ, PROMPTYARD_API_KEY=key, PROMPTYARD_BASE_URL=live_url)
    (tmp_path / "exported.py").write_text(code)
    run = subprocess.run([sys.executable, "-c", "import exported; print(exported.run_prompt(word='hi'))"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    # The fixed-cost model answers with the reversed prompt: the saved text, byte for byte.
    assert run.stdout.strip() == "Echo hi: it's \"$HOME\" `here`"[::-1]
    assert console_errors == []
