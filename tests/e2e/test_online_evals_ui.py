"""Online evaluation in a real browser: a rule added on the prompt's rules page
(the evaluator picker), /v1 traffic for the version scored as it is logged
(the embedded default: a thread of the server), the scores on the version's
page; pausing the rule from the page."""

import json

import httpx
import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from evals.models import OnlineEvalRule, OnlineScore
from playground import services as playground_services
from tests.e2e.conftest import screenshot
from tests.e2e.test_playground_ui import create_api_key, sign_up
from tests.factories import PromptFactory, PromptVersionFactory
from tests.polling import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]


def test_a_rule_made_on_the_page_scores_v1_traffic_shown_on_the_version_page(live_url, new_page,
                                                                              console_errors):
    page = new_page()
    owner = get_user_model().objects.get(username=sign_up(page, live_url))
    prompt = PromptFactory(owner=owner, title="Greeter")
    version = PromptVersionFactory(prompt=prompt, body="{{text}}", model_name="fixed-cost")
    playground_services.label_move(prompt=prompt, name="production", version_id=version.pk,
                                   expected_version_id=None, actor=owner)

    page.goto(f"{live_url}/prompts/{prompt.pk}/online-evals/")
    expect(page.locator("#online-none")).to_be_visible()
    page.fill("#online-rate", "100")
    page.fill("#online-label", "production")
    page.check("#ev-regex")
    page.fill("[data-evaluator=regex] [data-arg=pattern]", "^!")  # the engine answers the input reversed
    page.click("#online-add")
    rule_row = page.locator("#online-rules tbody tr")
    expect(rule_row).to_have_count(1)
    expect(rule_row).to_contain_text("regex")
    expect(rule_row).to_contain_text("100%")
    expect(rule_row).to_contain_text("every version through production")

    key = create_api_key(page)
    for text in ("Hello Ada!", "Hi there!", "no bang", "none here"):
        r = httpx.post(f"{live_url}/v1/chat/completions", timeout=30,
                       json={"model": "fixed-cost", "messages": [{"role": "user", "content": text}]},
                       headers={"Authorization": f"Bearer {key}", "X-Prompt-Version": str(version.pk),
                                "X-Prompt-Label": "production",
                                "X-Prompt-Variables": json.dumps({"text": text})})
        assert r.status_code == 200, r.text
    wait_for(lambda: OnlineScore.objects.filter(prompt_version=version).count() == 4, timeout=60,
             what="the four generations to be scored")

    page.goto(f"{live_url}/prompts/{prompt.pk}/versions/{version.pk}/generations/")
    online = page.get_by_role("table", name="Online scores")
    expect(online.locator("tbody tr")).to_have_count(1)
    expect(online.locator("tbody tr")).to_contain_text("regex")
    expect(online.locator("tbody tr")).to_contain_text("0.50 (")
    expect(online.locator("tbody tr")).to_contain_text("pass 50% · n=4")
    expect(page.get_by_role("img", name="regex: mean score over time")).to_be_visible()
    screenshot(page, "online-scores")

    page.get_by_role("link", name="Online evaluation", exact=True).click()
    expect(rule_row).to_contain_text("4 sampled · 4 scored")
    # The page saves the change and reloads itself: click, then wait for both
    # (uncheck() would check the box's state in the middle of that reload).
    with page.expect_response(lambda r: r.request.method == "PATCH"), page.expect_navigation():
        page.locator("[data-toggle]").click()
    expect(page.locator("[data-toggle]")).not_to_be_checked()
    wait_for(lambda: not OnlineEvalRule.objects.get().enabled, what="the rule to be paused")
    assert console_errors == []
