"""POST /api/estimate: the cost bound of a set of generations (their models'
prices at max_tokens) and the time the live pool needs for them; and the model
cards the playground draws its controls from."""

import math

import pytest

from inference_protocol.cards import generating_cards, model_card
from inference_protocol.pricing import token_cost

URL = "/api/estimate"
MESSAGES = [{"role": "system", "content": "x" * 30}, {"role": "user", "content": "y" * 60}]


def _item(**fields):
    return {"model": "fixed-cost", "messages": MESSAGES, "max_tokens": 100, "count": 1, **fields}


@pytest.fixture
def priced(settings):
    settings.INFERENCE_PRICES = {"fixed-cost": {"input": 2.0, "output": 8.0}}
    settings.RATE_LIMIT_CHARS_PER_TOKEN = 3.0
    settings.RATE_LIMIT_TOKENS_PER_MESSAGE = 4
    return settings


def test_should_bound_the_cost_at_max_tokens_for_every_run(auth_client, priced):
    answer = auth_client.post(URL, {"items": [_item(count=10), _item(max_tokens=50, count=2)]}, format="json")
    assert answer.status_code == 200, answer.content
    data = answer.json()
    prompt_tokens = math.ceil(90 / 3.0) + 4 * 2  # the admission stage's own estimate
    assert [i["prompt_tokens"] for i in data["items"]] == [prompt_tokens, prompt_tokens]
    expected = (10 * (prompt_tokens * 2.0 + 100 * 8.0) + 2 * (prompt_tokens * 2.0 + 50 * 8.0)) / 1e6
    assert data["cost_usd"] == pytest.approx(expected)
    assert token_cost("fixed-cost", prompt_tokens, 100) == pytest.approx((prompt_tokens * 2.0 + 800) / 1e6)


def test_should_leave_the_cost_of_an_unpriced_model_null(auth_client, priced):
    priced.INFERENCE_PRICES = {}
    data = auth_client.post(URL, {"items": [_item()]}, format="json").json()
    assert data["cost_usd"] is None and data["items"][0]["cost_usd"] is None


def test_should_not_time_a_model_without_a_live_worker(auth_client, priced):
    data = auth_client.post(URL, {"items": [_item()]}, format="json").json()
    assert data["seconds"] is None and data["basis"]["fixed-cost"]["workers"] == 0


@pytest.mark.parametrize(("body", "status", "field", "code"), [
    ({"items": [_item(model="nope")]}, 404, "model", "model_not_found"),
    ({"items": [_item(max_tokens=0)]}, 400, "items", None),
    ({"items": [_item(messages=[])]}, 400, "items", None),
    ({"items": []}, 400, "items", None),
    ({"items": [_item(count=0)]}, 400, "items", None),
])
def test_should_refuse_bad_input_at_its_field(auth_client, priced, body, status, field, code):
    answer = auth_client.post(URL, body, format="json")
    assert answer.status_code == status, answer.content
    error = answer.json()["error"]
    assert error["field"].startswith(field) and (code is None or error["code"] == code)


def test_should_need_a_signed_in_caller(api_client):
    assert api_client.post(URL, {"items": [_item()]}, format="json").status_code in (401, 403)


def test_should_describe_each_generating_model_from_its_engine_and_the_settings(settings, priced):
    settings.INFERENCE_MAX_TOKENS_LIMIT = 4096
    settings.INFERENCE_DEFAULT_MAX_TOKENS = 128
    cards = {c["id"]: c for c in generating_cards()}
    assert "all-minilm-l6-v2" not in cards  # an embedding model runs no prompt
    card = model_card("fixed-cost")
    assert card["features"] == ["completions"] and card["price"] == {"input": 2.0, "output": 8.0}
    tokens = next(p for p in card["parameters"] if p["name"] == "max_tokens")
    assert (tokens["max"], tokens["default"]) == (4096, 128)


def test_should_estimate_an_evaluation_run_as_rows_times_columns(auth_client, user, priced):
    from evals.datasets import dataset_create, dataset_version_create
    from tests.factories import PromptFactory, PromptVersionFactory

    dataset = dataset_create(owner=user, name="cases")
    dataset_version_create(dataset=dataset, author=user,
                           add=[{"variables": {"name": "Ada" * i}} for i in range(1, 8)])
    version = PromptVersionFactory(prompt=PromptFactory(owner=user), body="Hi {{name}}", max_tokens=20)
    columns = [{"prompt": str(version.prompt_id), "version": str(version.pk)}] * 2
    answer = auth_client.post("/api/evals/estimate", {"dataset": str(dataset.pk), "columns": columns},
                              format="json")
    assert answer.status_code == 200, answer.content
    data = answer.json()
    assert [i["count"] for i in data["items"]] == [7, 7] and data["items"][0]["max_tokens"] == 20
    longest = math.ceil(len("Hi " + "Ada" * 7) / 3.0) + 4  # the longest row stands for all
    assert data["items"][0]["prompt_tokens"] == longest
    assert data["cost_usd"] == pytest.approx(2 * 7 * (longest * 2.0 + 20 * 8.0) / 1e6)
    other = auth_client.post("/api/evals/estimate", {"dataset": str(dataset.pk), "columns": []},
                             format="json")
    assert other.status_code == 400 and other.json()["error"]["code"] == "columns_required"
