"""The regression banner as a viewer and after Dismiss, the version page's
online scores side by side, and the online evaluation form's errors, in a real
browser. Traffic, alerts and scores are seeded through the services (the
check and the scoring as their workers run them); the clicks go through the
page."""

import datetime

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from evals.models import OnlineEvalRule
from evals.online import rule_create
from generations.models import AlertStatus, Generation, RegressionAlert
from generations.online import online_score
from generations.regression import regression_check
from generations.store import generations_store
from playground import services as playground_services
from playground.models import Label, LabelMove
from sharing import services as sharing
from tests.e2e.test_playground_ui import sign_up
from tests.factories import PromptFactory, PromptVersionFactory
from tests.generations.conftest import entry

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]

N = 60  # generations a side


def _regressed(owner):
    """production moved v1 -> v2 two hours ago; v2 slower and worse on json_valid; the check has run."""
    prompt = PromptFactory(owner=owner, title="Greeter")
    v1 = PromptVersionFactory(prompt=prompt, body="Hello {{name}}!", model_name="fixed-cost")
    v2 = PromptVersionFactory(prompt=prompt, parent=v1, body="Hi {{name}}!", model_name="fixed-cost")
    for to, frm in ((v1, None), (v2, v1)):
        playground_services.label_move(prompt=prompt, name="production", version_id=to.pk,
                                       expected_version_id=frm and frm.pk, actor=owner)
    move = LabelMove.objects.get(to_version=v2)
    moved_at = move.created_at - datetime.timedelta(hours=2)
    LabelMove.objects.filter(pk=move.pk).update(created_at=moved_at)
    t = moved_at.timestamp()
    generations_store([entry(v1, owner, label="production", output='{"ok": true}', latency_ms=100 + i % 30,
                             at=t - N - 1 + i) for i in range(N)])
    generations_store([entry(v2, owner, label="production", output="Sure!" if i % 2 else '{"ok": true}',
                             latency_ms=200 + i % 30, at=t + 1 + i) for i in range(N)])
    rule = rule_create(prompt=prompt, user=owner, evaluator="json_valid", sample_rate=1.0)
    online_score(rule.pk, list(Generation.objects.filter(prompt_id=prompt.pk).values_list("pk", flat=True)))
    assert "latency_p95" in [a.rule for a in regression_check(now=moved_at + datetime.timedelta(hours=1))]
    return prompt, v1, v2


def test_a_viewer_sees_the_banner_without_actions_and_an_editor_dismisses_it(live_url, new_page,
                                                                             console_errors, settings):
    settings.REGRESSION_MIN_SAMPLES = 40
    page = new_page()
    owner = get_user_model().objects.get(username=sign_up(page, live_url))
    prompt, v1, v2 = _regressed(owner)
    viewer_page = new_page()
    sharing.grant_create(prompt=prompt, actor=owner, role="viewer", username=sign_up(viewer_page, live_url))
    version_url = f"{live_url}/prompts/{prompt.pk}/versions/{v2.pk}/generations/"

    viewer_page.goto(version_url)
    banner = viewer_page.locator("#regression-alerts .regression-alert")
    expect(banner).to_have_count(1)
    expect(banner.locator("li", has_text="Latency p95")).to_contain_text(" ms on v2 against ")
    expect(banner).to_contain_text("An editor of this prompt can move production back to v1.")
    expect(banner.get_by_role("button")).to_have_count(0)
    # The online scores: which column is this version, which the one it replaced.
    online = viewer_page.get_by_role("table", name="Online scores")
    expect(online.locator("thead")).to_contain_text("v2 (this)")
    expect(online.locator("thead")).to_contain_text("v1 (before)")
    expect(online.locator("tbody tr")).to_contain_text("pass 50% · n=60")

    page.goto(f"{live_url}/prompts/{prompt.pk}/")
    banner = page.locator("#regression-alerts .regression-alert")
    expect(banner).to_contain_text("Label production moved to v2, which regressed:")
    page.get_by_role("button", name="Dismiss").click()
    expect(banner).to_contain_text("Dismissed: production stays on v2.")
    expect(banner.get_by_role("button")).to_have_count(0)
    assert set(RegressionAlert.objects.values_list("status", flat=True)) == {AlertStatus.DISMISSED}
    assert Label.objects.get(prompt=prompt, name="production").version_id == v2.pk
    page.reload()
    expect(page.locator("#regression-alerts")).to_be_hidden()
    assert console_errors == []


def test_the_rule_form_shows_its_errors_at_the_form(live_url, new_page, console_errors):
    page = new_page()
    owner = get_user_model().objects.get(username=sign_up(page, live_url))
    prompt = PromptFactory(owner=owner, title="Greeter")
    PromptVersionFactory(prompt=prompt, body="{{text}}", model_name="fixed-cost")
    page.goto(f"{live_url}/prompts/{prompt.pk}/online-evals/")
    expect(page.locator("#online-none")).to_contain_text("Add one below")
    error = page.locator("#online-form-error")
    expect(error).to_be_hidden()

    page.get_by_role("button", name="Add rules").click()
    expect(error).to_have_text("Pick an evaluator.")
    # contains on production traffic needs its own text (there is no expected output).
    page.check("#ev-contains")
    expect(page.locator("[data-evaluator=contains] .badge")).to_have_count(0)
    page.get_by_role("button", name="Add rules").click()
    expect(error).to_have_text("contains: give the text to find.")
    assert not OnlineEvalRule.objects.exists()

    page.fill("[data-evaluator=contains] [data-arg=value]", "Ada")
    page.get_by_role("button", name="Add rules").click()
    row = page.locator("#online-rules tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text('{"value": "Ada"}')
    expect(error).to_be_hidden()
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Delete").click()
    expect(page.locator("#online-none")).to_be_visible()
    assert not OnlineEvalRule.objects.exists()
    assert console_errors == []
