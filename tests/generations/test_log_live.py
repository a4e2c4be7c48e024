"""The generations log on the live stack (uvicorn + Celery worker + Redis +
PostgreSQL + S3; fixed-cost engine: the answer is the last message reversed):
a run of a saved version by label, through /v1 with the SDK's headers or by
reference, lands in the log from the usage writer's batch, with its variables."""

import json

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from core.blobstore import get_blob_store
from generations.models import Generation
from inference_client.models import UsageRecord
from playground import services as playground_services
from tests.factories import ApiKeyFactory, PromptFactory, PromptVersionFactory, UserFactory
from tests.inference_client.conftest import (
    GENERATIONS_LIMITS,
    METRICS_HEADERS,
    gateway_worker,
    logged_prices,
    stack_env,
    uvicorn_server,
    wait_for_worker,
)
from tests.polling import wait_for

pytestmark = pytest.mark.needs_services

MODEL = "gen-fixed-cost"
MODELS = {MODEL: {"engine": "fixed_cost", "max_inputs": 50, "call_s": 0.02, "per_token_s": 0.001}}
STACK = {"INFERENCE_MODELS": json.dumps(MODELS)}  # priced in every stack (LOGGED_PRICES)


@pytest.fixture(scope="module")
def gen_worker():
    with gateway_worker(MODEL, concurrency=8, name="gen-test", env=stack_env(**STACK)) as proc:
        yield proc


@pytest.fixture(scope="module")
def gen_server(django_db_setup, django_db_blocker, gen_worker):
    with uvicorn_server(django_db_blocker, **STACK) as base:
        yield base


@pytest.fixture
def live(gen_server, gen_worker, transactional_db, _clean_cache, settings):
    settings.INFERENCE_MODELS = MODELS
    # The usage writer may run here (draining the stream) as well as in the servers: the same
    # limits and prices.
    settings.INFERENCE_PRICES = logged_prices()
    for name, value in GENERATIONS_LIMITS.items():
        setattr(settings, name, int(value))
    wait_for_worker(MODEL)
    yield gen_server
    wait_for(_stream_empty, what="the usage writer to store every record")


def _stream_empty() -> bool:
    from core.redis import get_redis
    from inference_client.usage import USAGE_STREAM

    return get_redis().xlen(USAGE_STREAM) == 0


@pytest.fixture
def world(live):
    owner = UserFactory()
    _, raw = ApiKeyFactory.create_with_raw(user=owner, tier="paid")
    prompt = PromptFactory(owner=owner)
    version = PromptVersionFactory(prompt=prompt, body="Hello {{name}}!", model_name=MODEL)
    playground_services.label_move(prompt=prompt, name="production", version_id=version.pk,
                                   expected_version_id=None, actor=owner)
    return {"base": live, "owner": owner, "raw": raw, "prompt": prompt, "version": version}


def _v1(world, content, raw=None, **headers):
    return httpx.post(f"{world['base']}/v1/chat/completions", timeout=30,
                      json={"model": MODEL, "messages": [{"role": "user", "content": content}],
                            "temperature": 0.2},
                      headers={"Authorization": f"Bearer {raw or world['raw']}", **headers})


def _logged(request_filter) -> Generation:
    return wait_for(lambda: Generation.objects.filter(**request_filter).first(), timeout=15,
                    what="the generation to be logged")


def test_should_log_a_v1_call_by_label_with_its_variables(world):
    version = world["version"]
    r = _v1(world, "Hello Ada!", **{"X-Prompt-Version": str(version.pk), "X-Prompt-Label": "production",
                                    "X-Prompt-Variables": json.dumps({"name": "Ada"})})
    assert r.status_code == 200, r.text
    g = _logged({"version_id": version.pk})
    assert (g.prompt_id, g.label, g.source, g.user_id, g.status) == (
        world["prompt"].pk, "production", "v1", world["owner"].pk, "ok")
    assert g.variables == {"name": "Ada"} and g.messages == [{"role": "user", "content": "Hello Ada!"}]
    assert g.output == "!adA olleH" and g.params["temperature"] == 0.2 and g.model == MODEL
    assert g.completion_tokens > 0 and g.latency_ms > 0 and g.ttft_ms is not None
    expected_cost = (g.prompt_tokens * 1.0 + g.completion_tokens * 2.0) / 1_000_000
    assert float(g.cost) == pytest.approx(expected_cost)
    assert g.request_id == UsageRecord.objects.get(prompt_version=version.pk).request_id


def test_should_log_a_run_by_label_and_put_a_large_output_in_the_object_store(world):
    name = "Grace " * 100  # the output (the rendered body reversed) is over GENERATIONS_INLINE_MAX_CHARS
    r = httpx.post(f"{world['base']}/api/prompts/{world['prompt'].pk}/labels/production/run", timeout=30,
                   json={"variables": {"name": name}}, headers={"Authorization": f"Bearer {world['raw']}"})
    assert r.status_code == 200, r.text
    g = _logged({"version_id": world["version"].pk})
    whole = r.json()["choices"][0]["message"]["content"]
    assert len(whole) > 100 and f"Hello {name}!"[::-1].startswith(whole)
    assert g.source == "run" and g.variables == {"name": name} and g.label == "production"
    assert (g.output_size, g.output_blob[:12], g.output) == (len(whole), "generations/", whole[:50])
    assert get_blob_store().get(g.output_blob).decode() == whole


def test_should_not_log_a_claim_on_a_version_the_caller_cannot_see(world):
    stranger = UserFactory()
    _, raw = ApiKeyFactory.create_with_raw(user=stranger, tier="paid")
    r = _v1(world, "sneaky", raw=raw, **{"X-Prompt-Version": str(world["version"].pk)})
    assert r.status_code == 200
    record = wait_for(lambda: UsageRecord.objects.filter(user=stranger).first(), what="the usage record")
    assert str(record.prompt_version) == str(world["version"].pk)  # the usage record keeps the claim
    assert not Generation.objects.filter(request_id=record.request_id).exists()


@pytest.mark.parametrize("value", ["not json", "[1, 2]", json.dumps({"v": "x" * 9000})])
def test_should_refuse_bad_prompt_variables_at_the_header(world, value):
    r = _v1(world, "hi", **{"X-Prompt-Version": str(world["version"].pk), "X-Prompt-Variables": value})
    assert r.status_code == 400
    error = r.json()["error"]
    assert (error["code"], error["param"]) == ("invalid_prompt_ref", "X-Prompt-Variables")


def test_should_count_and_not_log_what_sampling_leaves_out(world, django_db_blocker):
    with uvicorn_server(django_db_blocker, **STACK, GENERATIONS_SAMPLE_RATE="0") as base:
        r = _v1({**world, "base": base}, "Hello!", **{"X-Prompt-Version": str(world["version"].pk)})
        assert r.status_code == 200
        record = wait_for(lambda: UsageRecord.objects.filter(user=world["owner"]).first(), what="usage")
        metrics = httpx.get(f"{base}/metrics", headers=METRICS_HEADERS).text
    dropped = [s.value for f in text_string_to_metric_families(metrics) for s in f.samples
               if s.name == "promptyard:generations_dropped_total" and s.labels.get("reason") == "sampled"]
    assert dropped == [1.0]
    assert not Generation.objects.filter(request_id=record.request_id).exists()
