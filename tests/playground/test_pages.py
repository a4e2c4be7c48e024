"""The prompt pages: access goes through access_prompt, strangers get 404."""

import pytest

from playground import services
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def prompt(user):
    return services.prompt_create(owner=user, title="Mine")


def test_should_render_list_playground_and_history_for_the_owner(client, user, prompt):
    client.force_login(user)
    assert "Mine" in client.get("/prompts/").content.decode()
    page = client.get(f"/prompts/{prompt.pk}/")
    assert page.status_code == 200 and b'id="page-config"' in page.content
    assert client.get(f"/prompts/{prompt.pk}/history/").status_code == 200


def test_should_offer_the_models_that_generate_text_and_not_the_embedding_one(client, user, prompt):
    client.force_login(user)
    page = client.get(f"/prompts/{prompt.pk}/")
    config = page.context["config"]
    assert [c["id"] for c in config["catalog"]] == ["fixed-cost", "smollm2"]  # less all-minilm-l6-v2


def test_should_answer_404_to_a_stranger_and_send_anonymous_users_to_login(client, prompt):
    for path in (f"/prompts/{prompt.pk}/", f"/prompts/{prompt.pk}/history/"):
        assert client.get(path).status_code == 302
    client.force_login(UserFactory())
    for path in (f"/prompts/{prompt.pk}/", f"/prompts/{prompt.pk}/history/", f"/prompts/{prompt.pk}/?v=x"):
        assert client.get(path).status_code == 404
    assert "Mine" not in client.get("/prompts/").content.decode()


def test_should_create_a_prompt_and_open_its_playground(client, user):
    client.force_login(user)
    response = client.post("/prompts/", {"title": "Fresh"})
    assert response.status_code == 302 and response["Location"].startswith("/prompts/")
    assert client.post("/prompts/", {"title": " "}).status_code == 400
