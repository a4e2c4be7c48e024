"""The prompt playground and history pages in a real browser, against a live
server with the real parts (PostgreSQL, Redis, the in-process inference worker)."""

import re
import uuid

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]

PASSWORD = "a-long-e2e-password-42"
TOOLS_JSON = ('[{"type": "function", "function": {"name": "get_weather", "parameters": '
              '{"type": "object", "properties": {"city": {"type": "string"}}}}}]')


def sign_up(page, base):
    username = f"ui{uuid.uuid4().hex[:10]}"
    page.goto(f"{base}/signup/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    expect(page.get_by_text("Log out " + username)).to_be_visible()
    return username


def create_api_key(page) -> str:
    """A new API key of the signed-in user, made through the API with the page's session."""
    return page.evaluate("""async () => {
        const csrf = document.cookie.match(/csrftoken=([^;]+)/)[1];
        const res = await fetch('/api/accounts/keys', {method: 'POST', credentials: 'same-origin',
            headers: {'Content-Type': 'application/json', 'X-CSRFToken': csrf},
            body: JSON.stringify({name: 'ui'})});
        return (await res.json()).key;
    }""")


def create_prompt(page, base, title):
    page.goto(f"{base}/prompts/")
    page.fill("#id_title", title)
    page.click("button:has-text('Create prompt')")
    page.wait_for_url(re.compile(r"/prompts/[0-9a-f-]{36}/$"))
    return page.url.rstrip("/").rsplit("/", 1)[-1]


def save(page, message, expect_number):
    page.fill("#commit-message", message)
    page.keyboard.press("Control+s")
    expect(page.locator("#save-ok")).to_have_text(f"Saved version {expect_number}.")


def open_node(page, number):
    page.locator(f'svg.tree g.node[data-number="{number}"]').click()
    expect(page.locator("#version-view h3")).to_have_text(f"Version {number}")


def test_should_run_stream_save_branch_diff_and_move_labels(live_url, new_page, console_errors):
    page = new_page()
    sign_up(page, live_url)
    prompt_id = create_prompt(page, live_url, "Greeter")

    # Edit: the variable is highlighted and gets an input in the panel.
    page.fill("#system-input", "You are terse.")
    page.fill("#body-input", "Say {{word}} now")
    expect(page.locator("#body-input + pre mark, .hl pre mark").first).to_have_text("{{word}}")
    page.fill("[data-var=word]", "hello")

    # Run (Ctrl+Enter): the fixed-cost engine answers with the reversed input, streamed.
    page.select_option("#model-select", "fixed-cost")
    page.locator("#body-input").focus()
    page.keyboard.press("Control+Enter")
    expect(page.locator("#output")).to_have_text("won olleh yaS", timeout=15_000)
    expect(page.locator("#stat-ttft")).to_have_text(re.compile(r"^\d+ ms$"))
    expect(page.locator("#stat-finish")).to_contain_text("finish")
    expect(page.locator("#run-error")).to_be_hidden()
    screenshot(page, "playground")

    save(page, "first", 1)
    page.fill("#body-input", "Say {{word}} twice now")
    page.fill("#tools-input", TOOLS_JSON)
    save(page, "second", 2)

    # Branch: open v1 in history, "edit from here", save a sibling of v2.
    page.click("a:has-text('History')")
    open_node(page, 1)
    expect(page.locator("#version-view")).to_contain_text("Say {{word}} now")
    page.click("#edit-from-here")
    expect(page.locator("#version-badge")).to_have_text("v1")
    expect(page.locator("#body-input")).to_have_value("Say {{word}} now")
    expect(page.locator("#branch-badge")).to_have_text("main")
    expect(page.locator("#branch-select option:checked")).to_have_text("main · v1 (not its tip)")
    page.fill("#body-input", "Shout {{word}}")
    page.fill("#save-branch", "shout")
    save(page, "branch", 3)
    # The new branch: in the badge, and the picker lists each branch's tip.
    expect(page.locator("#branch-badge")).to_have_text("shout")
    expect(page.locator("#branch-select option")).to_have_text(["shout · v3", "main · v2"])
    page.select_option("#branch-select", label="main · v2")
    page.wait_for_url(re.compile(r"\?v="))
    expect(page.locator("#version-badge")).to_have_text("v2")
    expect(page.locator("#branch-badge")).to_have_text("main")
    screenshot(page, "branches")

    page.goto(f"{live_url}/prompts/{prompt_id}/history/")
    expect(page.locator("svg.tree g.node")).to_have_count(3)
    expect(page.locator("svg.tree text.branch")).to_have_text(["⎇ main", "⎇ main", "⎇ shout"])
    open_node(page, 3)
    expect(page.locator("#version-view")).to_contain_text("edit of v1")

    # Side-by-side diff of v1 and v2, the change highlighted.
    node = 'svg.tree g.node[data-number="{}"]'
    version_id = {n: page.get_attribute(node.format(n), "data-version") for n in (1, 2)}
    page.select_option("#diff-from", version_id[1])
    page.select_option("#diff-to", version_id[2])
    page.click("#diff-btn")
    expect(page.locator(".diff ins").first).to_contain_text("twice")
    expect(page.locator("#diff-tools tbody tr")).to_have_count(1)  # v2 added the tools
    expect(page.locator("#diff-tools")).to_contain_text('"name": "get_weather"')
    expect(page.locator("#diff-system")).to_have_attribute("data-status", "same")  # system: unchanged

    # Labels: move (compare-and-set), move again, undo, redo.
    open_node(page, 2)
    page.fill("#label-name", "production")
    page.click("#label-move")
    expect(page.locator("#label-status")).to_contain_text("production → v2")
    expect(page.locator("svg.tree g.node", has_text="production")).to_have_count(1)
    open_node(page, 3)
    page.click("#label-move")
    expect(page.locator("#label-status")).to_contain_text("production → v3")
    page.click("#label-undo")
    expect(page.locator("#label-status")).to_contain_text("production → v2")
    page.click("#label-redo")
    expect(page.locator("#label-status")).to_contain_text("production → v3")

    # Outputs of two versions side by side.
    # Each runs as saved, through its own run route: v2 offers tools, which this model does not run,
    # and says so rather than run without them.
    page.click("#compare-run")
    expect(page.locator("#cmp-a")).not_to_be_empty(timeout=15_000)
    expect(page.locator("#compare-error")).to_contain_text("does not implement 'tools'", timeout=15_000)
    assert console_errors == ["console: Failed to load resource: the server responded with a status of 400 "
                              "(Bad Request)"]  # that refusal, as the browser logs it
    console_errors.clear()
    screenshot(page, "history")

    page.goto(f"{live_url}/prompts/")
    expect(page.locator(".prompt-card")).to_contain_text("Greeter")
    screenshot(page, "prompt-list")
    assert console_errors == []


def test_should_keep_the_highlight_layer_on_the_text_as_it_scrolls_and_resizes(live_url, new_page,
                                                                             console_errors):
    page = new_page()
    sign_up(page, live_url)
    page.goto(f"{live_url}/playground/")
    body, mirror = page.locator("#body-input"), page.locator(".hl:has(#body-input) pre")
    body.fill("".join(f"Line {i}.\n" for i in range(300)) + "Last: {{tail}}")
    expect(mirror.locator("mark")).to_have_text("{{tail}}")
    body.evaluate("(t) => { t.scrollTop = t.scrollHeight; }")  # as the wheel would
    top = body.evaluate("(t) => t.scrollTop")
    assert top > 1000
    expect(mirror).to_have_js_property("scrollTop", top)
    expect(mirror.locator("mark")).to_be_in_viewport()
    body.evaluate("(t) => { t.style.height = '420px'; }")  # as the resize handle would
    expect(mirror).to_have_css("height", "420px")
    body.press("End")
    body.type(" {{more}}")  # a repaint keeps the scroll offset
    expect(mirror.locator("mark")).to_have_count(2)
    assert mirror.evaluate("(m) => m.scrollTop") == body.evaluate("(t) => t.scrollTop") > 1000
    assert console_errors == []


def test_should_keep_text_when_save_fails_and_restore_the_draft_after_reload(live_url, new_page,
                                                                            console_errors):
    page = new_page(width=390, height=844)  # phone width
    sign_up(page, live_url)
    create_prompt(page, live_url, "Draft keeper")
    page.fill("#body-input", "Precious text for {{who}}")
    page.fill("#tools-input", TOOLS_JSON)
    page.fill("#max-tokens", "0")  # invalid: the server refuses the save
    page.fill("#commit-message", "will fail")
    page.click("#save-btn")
    expect(page.locator("#save-error")).to_contain_text("max_tokens")
    expect(page.locator("#body-input")).to_have_value("Precious text for {{who}}")
    screenshot(page, "playground-phone-failed-save")

    page.reload()
    expect(page.locator("#draft-note")).to_have_text("Restored your unsaved draft")
    expect(page.locator("#body-input")).to_have_value("Precious text for {{who}}")
    expect(page.locator("#commit-message")).to_have_value("will fail")
    expect(page.locator("#tools-input")).to_have_value(TOOLS_JSON)
    page.fill("#max-tokens", "64")
    page.fill("#tools-input", '[{"type": "function"')  # refused here, before any request
    page.click("#save-btn")
    expect(page.locator("#save-error")).to_contain_text("Tools is not valid JSON")
    page.fill("#tools-input", TOOLS_JSON)
    save(page, "fixed", 1)
    page.reload()  # the saved version (?v=...) loads with its tools
    expect(page.locator("#version-badge")).to_have_text("v1")
    expect(page.locator("#tools-input")).to_have_value(re.compile(r'"name": "get_weather"'))
    # The one console error is the browser's own log of the refused save (400).
    assert [e for e in console_errors if "status of 400" not in e] == []
    assert len(console_errors) == 1


def test_should_upload_a_large_body_with_progress_and_load_it_lazily(live_url, new_page, console_errors):
    page = new_page()
    sign_up(page, live_url)
    prompt_id = create_prompt(page, live_url, "Big context")
    # 1.3 MB over many lines, with non-ASCII text split across Range chunks.
    big = "".join(f"line {i} é✓ {{{{topic}}}} lorem ipsum dolor sit amet\n" for i in range(24_000))
    page.evaluate("t => { const a = document.getElementById('body-input'); a.value = t;"
                  " a.dispatchEvent(new Event('input')); }", big)
    save(page, "large", 1)

    page.reload()
    expect(page.locator("#version-badge")).to_have_text("v1")
    length = page.evaluate("() => document.getElementById('body-input').value.length")
    assert length == len(big)
    page.goto(f"{live_url}/prompts/{prompt_id}/history/")
    expect(page.locator(".virt")).to_be_visible()
    expect(page.locator(".virt .line").first).to_contain_text("line 0 é✓")
    assert page.locator(".virt .line").count() < 200  # virtualised: only the visible lines exist
    screenshot(page, "history-large-body")
    assert console_errors == []
