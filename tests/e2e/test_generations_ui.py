"""The version's generations page in a real browser: runs by label are listed
with their variables, the figures stand beside the previous production
version's, and "Add to dataset" adds a row with the expected output as edited."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from evals.models import DatasetRow
from playground import services as playground_services
from tests.e2e.conftest import screenshot
from tests.e2e.test_playground_ui import sign_up
from tests.factories import PromptFactory, PromptVersionFactory

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]

RUN = """async ([path, name]) => {
    const csrf = document.cookie.match(/csrftoken=([^;]+)/)[1];
    const res = await fetch(path, {method: 'POST', credentials: 'same-origin',
        headers: {'Content-Type': 'application/json', 'X-CSRFToken': csrf},
        body: JSON.stringify({variables: {name}})});
    return res.status;
}"""


def test_should_list_generations_compare_versions_and_add_one_to_a_dataset(live_url, new_page,
                                                                            console_errors):
    page = new_page()
    username = sign_up(page, live_url)
    owner = get_user_model().objects.get(username=username)
    prompt = PromptFactory(owner=owner, title="Greeter")
    v1 = PromptVersionFactory(prompt=prompt, body="Hello {{name}}!", model_name="fixed-cost")
    v2 = PromptVersionFactory(prompt=prompt, parent=v1, body="Hi {{name}}!", model_name="fixed-cost")
    run = f"/api/prompts/{prompt.pk}/labels/production/run"
    playground_services.label_move(prompt=prompt, name="production", version_id=v1.pk,
                                   expected_version_id=None, actor=owner)
    page.goto(f"{live_url}/prompts/")
    for name in ("Ada", "Alan"):
        assert page.evaluate(RUN, [run, name]) == 200
    playground_services.label_move(prompt=prompt, name="production", version_id=v2.pk,
                                   expected_version_id=v1.pk, actor=owner)
    for name in ("Grace", "Edsger", "Barbara"):
        assert page.evaluate(RUN, [run, name]) == 200
    page.evaluate("""async () => {
        const csrf = document.cookie.match(/csrftoken=([^;]+)/)[1];
        await fetch('/api/datasets/', {method: 'POST', credentials: 'same-origin',
            headers: {'Content-Type': 'application/json', 'X-CSRFToken': csrf},
            body: JSON.stringify({name: 'greetings'})});
    }""")

    page.goto(f"{live_url}/prompts/{prompt.pk}/versions/{v2.pk}/generations/?label=production")
    rows = page.locator("table.gen-list tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.first).to_contain_text("Barbara")
    expect(rows.first.locator(".gen-output")).to_have_text("!arabraB iH")
    totals = page.locator("table.gen-totals")
    expect(totals.locator("thead")).to_contain_text("v1 (before)")
    expect(totals.locator("tbody tr").first).to_have_text("Generations32")
    expect(page.locator(".gen-chart polyline.previous").first).to_be_attached()
    link = rows.first.get_by_role("link", name="Open in playground")
    generation_id = rows.first.get_attribute("id").removeprefix("gen-")
    assert link.get_attribute("href") == f"/prompts/{prompt.pk}/?v={v2.pk}&generation={generation_id}"

    rows.first.get_by_role("button", name="Add to dataset").click()
    expect(page.locator("#case-expected")).to_have_value("!arabraB iH")
    expect(page.locator("#case-dataset option")).to_have_text("greetings")
    page.fill("#case-expected", "Hi Barbara!")
    screenshot(page, "generations-add-case")
    page.get_by_role("button", name="Add row").click()
    expect(page.locator("#case-status")).to_have_text("Added as row 1 of dataset version 1.")
    row = DatasetRow.objects.get()
    assert (row.variables, row.expected) == ({"name": "Barbara"}, "Hi Barbara!")
    page.click("#case-close")

    page.fill("#f-q", "grace")
    page.click("button:has-text('Apply')")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Grace")
    screenshot(page, "generations")
    # Open in playground: the version, with the generation's variables in the panel.
    rows.first.get_by_role("link", name="Open in playground").click()
    expect(page.locator("#version-badge")).to_have_text("v2")
    expect(page.locator("[data-var=name]")).to_have_value("Grace")
    expect(page.locator("#generations-link")).to_have_attribute(
        "href", f"/prompts/{prompt.pk}/versions/{v2.pk}/generations/")
    assert console_errors == []

    other = new_page()
    sign_up(other, live_url)
    assert other.goto(f"{live_url}/prompts/{prompt.pk}/versions/{v2.pk}/generations/").status == 404
