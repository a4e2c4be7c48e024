"""The regression alarm in a real browser: production traffic through /v1 runs
v1 under its label (X-Prompt-Version, X-Prompt-Label), the label moves to v2
(longer answers, so the fixed-cost engine is slower), more traffic, the check
runs and raises an alert; the playground and
the version page show the banner, one click moves the label back to v1 and the
banner says so, and it is gone on the next load."""

import contextlib
import datetime
import json

import httpx
import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from generations.models import AlertStatus, Generation, RegressionAlert
from generations.regression import regression_check
from playground import services as playground_services
from playground.bodies import body_text
from playground.models import Label, LabelMove
from tests.e2e.conftest import screenshot
from tests.e2e.test_playground_ui import create_api_key, sign_up
from tests.factories import PromptFactory, PromptVersionFactory
from tests.polling import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]

RUNS = 10  # a side; the check needs 8 here


@contextlib.contextmanager
def _screenshot_on_failure(page, name):
    try:
        yield
    except BaseException:
        screenshot(page, f"{name}-failed")
        raise


def _traffic(live_url, key, version, names):
    """An application's calls through /v1, naming the saved version and label it rendered."""
    for name in names:
        content = body_text(version).replace("{{name}}", name)
        answer = httpx.post(f"{live_url}/v1/chat/completions", timeout=30,
                            json={"model": "fixed-cost", "messages": [{"role": "user", "content": content}]},
                            headers={"Authorization": f"Bearer {key}", "X-Prompt-Version": str(version.pk),
                                     "X-Prompt-Label": "production",
                                     "X-Prompt-Variables": json.dumps({"name": name})})
        assert answer.status_code == 200, answer.text
    # The usage writer logs the calls in its batches, off the request's path.
    logged = Generation.objects.filter(version_id=version.pk, label="production")
    wait_for(lambda: logged.count() >= len(names), what="the calls in the generations log")


def test_should_raise_show_and_roll_back_a_regression(live_url, new_page, console_errors, settings):
    settings.REGRESSION_MIN_SAMPLES = 8
    page = new_page()
    owner = get_user_model().objects.get(username=sign_up(page, live_url))
    prompt = PromptFactory(owner=owner, title="Greeter")
    fast = PromptVersionFactory(prompt=prompt, body="Hi {{name}}!", model_name="fixed-cost")
    slow = PromptVersionFactory(prompt=prompt, parent=fast, model_name="fixed-cost",
                                body="Hi {{name}}, thank you for writing to us, we read every word!")
    playground_services.label_move(prompt=prompt, name="production", version_id=fast.pk,
                                   expected_version_id=None, actor=owner)
    with _screenshot_on_failure(page, "regression"):
        key = create_api_key(page)
        page.goto(f"{live_url}/prompts/{prompt.pk}/")
        expect(page.locator("#regression-alerts")).to_be_hidden()
        names = [f"Ada{i}" for i in range(RUNS)]
        _traffic(live_url, key, fast, names)
        playground_services.label_move(prompt=prompt, name="production", version_id=slow.pk,
                                       expected_version_id=fast.pk, actor=owner)
        _traffic(live_url, key, slow, names)
        move = LabelMove.objects.filter(to_version=slow).get()
        # The check as its next tick would run it, ten minutes after the move.
        raised = regression_check(now=move.created_at + datetime.timedelta(minutes=10))
        assert "latency_p95" in [a.rule for a in raised]

        page.reload()
        banner = page.locator("#regression-alerts .regression-alert")
        expect(banner).to_have_count(1)
        expect(banner).to_contain_text("Label production moved to v2, which regressed:")
        latency = banner.locator("li", has_text="Latency p95")
        expect(latency).to_contain_text(" ms on v2 against ")
        expect(latency).to_contain_text(" ms on v1 (10 vs 10 samples, p < 0.001)")

        page.goto(f"{live_url}/prompts/{prompt.pk}/versions/{slow.pk}/generations/")
        expect(page.locator("#regression-alerts")).to_be_visible()
        screenshot(page, "regression-banner")
        page.get_by_role("button", name="Move production back to v1").click()
        expect(banner).to_contain_text("Rolled back: production points at v1 again.")
        expect(banner.get_by_role("button")).to_have_count(0)
        assert Label.objects.get(prompt=prompt, name="production").version_id == fast.pk
        assert set(RegressionAlert.objects.values_list("status", flat=True)) == {AlertStatus.ROLLED_BACK}

        page.reload()
        expect(page.locator("#regression-alerts")).to_be_hidden()
        expect(page.locator("#regression-alerts .regression-alert")).to_have_count(0)
    assert console_errors == []
