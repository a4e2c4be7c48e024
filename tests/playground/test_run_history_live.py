"""Run history from real runs: the playground's run route on the live stack
(uvicorn + Celery worker + Redis + PostgreSQL, fixed-cost engine: the answer is
the last message reversed) stores each run exactly as the server sent it."""

import json
import math

import httpx
import pytest

from playground.models import PlaygroundRun
from tests.factories import ApiKeyFactory, PromptFactory, PromptVersionFactory, UserFactory
from tests.inference_client.conftest import (
    gateway_worker,
    stack_env,
    usage_settled,
    uvicorn_server,
    wait_for_worker,
)
from tests.polling import wait_for

pytestmark = pytest.mark.needs_services  # a live server and a Celery worker on RabbitMQ and Redis

MODEL = "runs-fixed-cost"
MODELS = {MODEL: {"engine": "fixed_cost", "max_inputs": 50, "call_s": 0.02, "per_token_s": 0.01}}
STACK = {"INFERENCE_MODELS": json.dumps(MODELS)}


@pytest.fixture(scope="module")
def runs_worker():
    with gateway_worker(MODEL, concurrency=8, name="runs-test", env=stack_env(**STACK)) as proc:
        yield proc


@pytest.fixture(scope="module")
def runs_server(django_db_setup, django_db_blocker, runs_worker):
    with uvicorn_server(django_db_blocker, **STACK) as base:
        yield base


@pytest.fixture
def live(runs_server, runs_worker, transactional_db, _clean_cache, settings):
    settings.INFERENCE_MODELS = MODELS
    wait_for_worker(MODEL)  # its heartbeat is back after the per-test Redis flush
    yield runs_server
    usage_settled()


def _post(live, raw, prompt, body, *, stream=False):
    return httpx.post(f"{live}/api/prompts/{prompt.pk}/run", json={**body, "stream": stream}, timeout=30,
                      headers={"Authorization": f"Bearer {raw}"})


def _sse_text(response) -> tuple[str, bool]:
    text, done = "", False
    for line in response.text.split("\n"):
        if not line.startswith("data: "):
            continue
        if line == "data: [DONE]":
            done = True
            continue
        for choice in json.loads(line[6:]).get("choices", []):
            text += (choice.get("delta") or {}).get("content") or ""
    return text, done


def test_should_store_a_streamed_draft_run_as_sent_before_the_stream_ends(live):
    user = UserFactory()
    _, raw = ApiKeyFactory.create_with_raw(user=user, tier="paid")
    prompt = PromptFactory(owner=user)
    draft = {"system": "Be brief.", "messages": [], "body": "Hello {{name}}!"}
    response = _post(live, raw, prompt, {**draft, "variables": {"name": "Ada"}, "model": MODEL,
                                         "temperature": 0.5, "max_tokens": 40, "top_p": 0.9, "stop": ["@@"]},
                     stream=True)
    assert response.status_code == 200, response.text
    text, done = _sse_text(response)
    assert done and text == "Hello Ada!"[::-1]
    # Stored before the [DONE] frame went out: no wait needed.
    run = PlaygroundRun.objects.get(pk=response.headers["x-playground-run"])
    assert (run.prompt_id, run.user_id, run.version_id, run.draft) == (prompt.pk, user.pk, None, draft)
    assert run.variables == {"name": "Ada"} and run.model == MODEL
    assert run.params == {"model": MODEL, "temperature": 0.5, "max_tokens": 40, "top_p": 0.9, "stop": ["@@"]}
    assert run.output == text and not run.output_truncated and run.status == "ok" and run.error_code == ""
    assert run.prompt_tokens > 0 and run.completion_tokens > 0
    assert run.latency_ms is not None and run.ttft_ms is not None and run.ttft_ms <= run.latency_ms
    assert run.request_id


def test_should_store_a_saved_version_run_without_a_draft(live):
    user = UserFactory()
    _, raw = ApiKeyFactory.create_with_raw(user=user, tier="paid")
    prompt = PromptFactory(owner=user)
    version = PromptVersionFactory(prompt=prompt, body="Hi {{name}}", model_name=MODEL)
    response = _post(live, raw, prompt, {"version": str(version.pk), "system": "", "body": "Hi {{name}}",
                                         "variables": {"name": "Bo"}, "model": MODEL})
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "oB iH"
    run = PlaygroundRun.objects.get(pk=response.headers["x-playground-run"])
    assert (run.version_id, run.draft, run.output, run.status) == (version.pk, None, "oB iH", "ok")
    edited = _post(live, raw, prompt, {"version": str(version.pk), "body": "Hey {{name}}",
                                       "variables": {"name": "Bo"}, "model": MODEL})
    edited_run = PlaygroundRun.objects.get(pk=edited.headers["x-playground-run"])
    assert edited_run.version_id == version.pk
    assert edited_run.draft == {"system": "", "messages": [], "body": "Hey {{name}}"}


def test_should_store_a_refused_run_with_its_code_and_store_nothing_for_a_stranger(live):
    user = UserFactory()
    _, raw = ApiKeyFactory.create_with_raw(user=user, tier="paid")
    prompt = PromptFactory(owner=user)
    refused = _post(live, raw, prompt, {"body": "x", "model": "no-such-model"})
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "model_not_found"
    run = PlaygroundRun.objects.get(pk=refused.headers["x-playground-run"])
    assert (run.status, run.error_code, run.output) == ("error", "model_not_found", "")
    _, other = ApiKeyFactory.create_with_raw(user=UserFactory(), tier="paid")
    hidden = _post(live, other, prompt, {"body": "x", "model": MODEL})
    assert hidden.status_code == 404 and hidden.json()["error"]["code"] == "prompt_not_found"
    unknown = _post(live, raw, prompt, {"body": "x", "model": MODEL, "logit_bias": {}})
    assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "unknown_parameter"
    assert PlaygroundRun.objects.count() == 1


def test_should_store_the_run_of_a_client_that_went_away_once_it_ends(live):
    user = UserFactory()
    _, raw = ApiKeyFactory.create_with_raw(user=user, tier="paid")
    prompt = PromptFactory(owner=user)
    body = {"body": "x" * 400, "model": MODEL, "max_tokens": 1000, "stream": True}
    with httpx.stream("POST", f"{live}/api/prompts/{prompt.pk}/run", json=body, timeout=30,
                      headers={"Authorization": f"Bearer {raw}"}) as response:
        assert response.status_code == 200
        run_id = response.headers["x-playground-run"]
        for line in response.iter_lines():
            if '"content":"x' in line:
                break  # the first token: leave
    run = wait_for(lambda: PlaygroundRun.objects.filter(pk=run_id).first(), timeout=15,
                   what="the run of the client that left")
    # Stopped (what had streamed) or ended before the stop reached the worker (all of it).
    assert run.status in ("cancelled", "ok"), run.status
    if run.status == "cancelled":
        assert run.error_code == "cancelled" and 0 < len(run.output) < 400 and set(run.output) == {"x"}
    else:
        assert run.output == "x" * 400 and run.completion_tokens > 0


def test_should_run_a_scratch_draft_with_turns_and_keep_it_for_its_author(live):
    user = UserFactory()
    _, raw = ApiKeyFactory.create_with_raw(user=user, tier="paid")
    turns = [{"role": "user", "content": "Hi {{name}}, a long example turn"},
             {"role": "assistant", "content": "Hello"}]
    for messages in ([], turns):
        draft = {"system": "", "messages": messages, "body": "Bye {{name}}"}
        response = httpx.post(f"{live}/api/playground/run", timeout=30,
                              headers={"Authorization": f"Bearer {raw}"},
                              json={**draft, "variables": {"name": "Ada"}, "model": MODEL, "max_tokens": 40})
        assert response.status_code == 200, response.text
        assert response.json()["choices"][0]["message"]["content"] == "Bye Ada"[::-1]
        run = PlaygroundRun.objects.get(pk=response.headers["x-playground-run"])
        assert (run.prompt_id, run.user_id, run.draft) == (None, user.pk, draft)


def test_should_time_an_estimate_on_the_live_workers(live, settings):
    """One worker of 50 slots, idle: a batch takes slots / rate; 120 runs need three."""
    _, raw = ApiKeyFactory.create_with_raw(user=UserFactory(), tier="paid")
    item = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 10, "count": 120}
    response = httpx.post(f"{live}/api/estimate", json={"items": [item]}, timeout=30,
                          headers={"Authorization": f"Bearer {raw}"})
    assert response.status_code == 200, response.text
    data = response.json()
    basis = data["basis"][MODEL]
    assert basis["workers"] == 1 and basis["slots"] == 50 and basis["requests_per_s"] > 0
    batches = math.ceil((basis["queued"] + 120) / 50)
    assert data["seconds"] == pytest.approx(50 / basis["requests_per_s"] * batches)
