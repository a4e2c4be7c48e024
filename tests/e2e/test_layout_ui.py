"""Layout rules every page keeps, checked in Chromium: an element with the
`hidden` attribute is never shown (a CSS `display` of its own must not override
it), checkboxes keep their own size instead of stretching like text inputs, and
no button stretches across a form's grid column."""

import pytest

from tests.e2e.conftest import screenshot
from tests.e2e.test_playground_ui import create_prompt, sign_up

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]

SHOWN_THOUGH_HIDDEN = """() => [...document.querySelectorAll('[hidden]')]
    .filter((e) => getComputedStyle(e).display !== 'none')
    .map((e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
        + (e.className ? '.' + e.className : ''))"""

WIDE_CHECKBOXES = """() => [...document.querySelectorAll('input[type=checkbox], input[type=radio]')]
    .filter((e) => e.getBoundingClientRect().width > 40)
    .map((e) => e.name + ':' + e.value + ' ' + Math.round(e.getBoundingClientRect().width) + 'px')"""


# At 1280 px the longest button label ("Save version Ctrl S", "Move to selected") is under 250 px.
WIDE_BUTTONS = """() => [...document.querySelectorAll('main button, main .btn')]
    .filter((e) => e.getBoundingClientRect().width > 320)
    .map((e) => (e.id || e.textContent.trim()) + ' ' + Math.round(e.getBoundingClientRect().width) + 'px')"""


def test_hidden_elements_stay_hidden_and_checkboxes_keep_their_size(live_url, new_page, console_errors):
    page = new_page()
    sign_up(page, live_url)
    prompt = create_prompt(page, live_url, "Layout")
    pages = ["/prompts/", f"/prompts/{prompt}/", f"/prompts/{prompt}/history/", "/evals/", "/chat/",
             "/settings/api-keys/", "/settings/webhooks/"]
    problems = {}
    for path in pages:
        page.goto(live_url + path)
        page.wait_for_load_state("networkidle")
        shown, wide = page.evaluate(SHOWN_THOUGH_HIDDEN), page.evaluate(WIDE_CHECKBOXES)
        buttons = page.evaluate(WIDE_BUTTONS)
        if shown or wide or buttons:
            problems[path] = {"shown though hidden": shown, "stretched": wide, "stretched buttons": buttons}
            screenshot(page, "layout" + path.replace("/", "_"))
    assert problems == {}
    assert console_errors == []
