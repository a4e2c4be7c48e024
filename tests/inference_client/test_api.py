"""/v1 through the whole stack: uvicorn + Celery worker + Redis + PostgreSQL."""

import json

import httpx
import openai
import pytest

from core.redis import get_redis
from inference_client.models import UsageRecord
from tests.inference_client.conftest import METRICS_HEADERS, MODEL, chat, make_key
from tests.polling import wait_for

pytestmark = pytest.mark.needs_services  # the live gateway: uvicorn, a Celery worker, Redis


def _sdk(base: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0, timeout=30)


def test_should_serve_plain_and_streamed_completions_to_the_openai_sdk(live):
    _, raw = make_key("paid")
    client = _sdk(live, raw)

    plain = client.chat.completions.create(model=MODEL,
                                           messages=[{"role": "user", "content": "hello world"}])
    assert plain.choices[0].message.content == "dlrow olleh"
    assert plain.choices[0].finish_reason == "stop"
    usage = plain.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (11, 11, 22)
    assert plain.id.startswith("chatcmpl-")
    raw_reply = client.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": "timed"}])
    phases = dict(part.strip().split(";dur=") for part in raw_reply.headers["server-timing"].split(","))
    assert list(phases) == ["authenticate", "parse", "resolve", "cache", "admit", "publish", "stream",
                            "worker", "total"]  # the stages (inference_client.stages), in order
    # The worker's time (queue + the 50 ms call) lies within the stream stage, within the total.
    assert 50 <= float(phases["worker"]) <= float(phases["stream"]) <= float(phases["total"])

    chunks = list(client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "streaming"}], max_tokens=5, stream=True,
        stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "gnima"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].usage.completion_tokens == 5

    models = {m.id for m in client.models.list()}
    assert MODEL in models and "smollm2" not in models  # only what this deployment configures


def test_should_record_usage_and_show_it_to_the_key_owner(live):
    key, raw = make_key("free")
    reply = chat(live, raw, "abc")
    assert reply.status_code == 200
    # Not streamed: the worker wrote the done event alone (it carries the text), one read.
    request_id = reply.json()["id"].removeprefix("chatcmpl-")
    (entry,) = get_redis().xrange(f"gen:{request_id}:events")
    assert json.loads(entry[1][b"e"])["type"] == "done"
    wait_for(lambda: UsageRecord.objects.filter(api_key=key).exists(), what="the usage record")
    shown = httpx.get(f"{live}/v1/usage", headers={"Authorization": f"Bearer {raw}"}).json()
    assert shown["summary"]["requests"] == 1
    row = shown["data"][0]
    assert (row["model"], row["prompt_tokens"], row["completion_tokens"]) == (MODEL, 3, 3)
    assert row["status"] == "ok"
    assert row["latency_ms"] >= 0 and row["cache_hit"] is None
    # Its first token's time, from the worker's, counted back from the result's arrival.
    assert 0 <= row["ttft_ms"] <= row["latency_ms"]
    other = make_key("free")[1]
    assert httpx.get(f"{live}/v1/usage", headers={"Authorization": f"Bearer {other}"}).json()["data"] == []


def test_should_expose_prometheus_metrics(live):
    _, raw = make_key("paid")
    chat(live, raw, "metrics")
    text = httpx.get(f"{live}/metrics", headers=METRICS_HEADERS).text
    assert f'inference_requests_total{{model="{MODEL}",status="200"}}' in text
    assert "promptyard:e2e_request_latency_seconds_bucket" in text
    assert "promptyard:time_to_first_token_seconds_bucket" in text
    assert f'inference_live_workers{{model="{MODEL}"}} 1.0' in text
    assert "inference_worker_batch_size" in text and "inference_cache_hit_ratio" in text


@pytest.mark.parametrize(("body", "param", "code"), [
    (b'{"model": MODEL, "messages": [', None, "invalid_json"),
    ({"model": MODEL, "messages": "hi"}, "messages", "invalid_type"),
    ({"model": MODEL, "messages": [{"role": "user", "content": 5}]}, "messages[0].content",
     "invalid_type"),
    ({"model": MODEL, "messages": [{"role": "user", "content": "x"}], "max_tokens": -1},
     "max_tokens", "integer_below_min_value"),
    ({"model": MODEL, "messages": [{"role": "user", "content": "x"}], "stream": "true"},
     "stream", "invalid_type"),
    ({"model": MODEL, "messages": [{"role": "user", "content": "x"}], "temperature": "hot"},
     "temperature", "invalid_type"),
    ({"model": MODEL, "messages": [{"role": "user", "content": "x"}], "bogus": 1}, "bogus",
     "unknown_parameter"),
    # A lone UTF-16 surrogate is valid JSON that no tokenizer can encode.
    pytest.param(b'{"model": "%s", "messages": [{"role": "user", "content": "x \\ud800"}]}' % MODEL.encode(),
                 "messages[0].content", "invalid_unicode", id="lone-surrogate"),
    ({"model": MODEL, "messages": [{"role": "user", "content": "x"}], "seed": -1}, "seed",
     "integer_below_min_value"),
    # `user` is stored with the usage record: a NUL would fail the record's write.
    ({"model": MODEL, "messages": [{"role": "user", "content": "x"}], "user": "a\x00b"}, "user",
     "invalid_value"),
    # Deeper than the parser's recursion limit, and deep but parseable.
    pytest.param(b'{"model": "m", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", None,
                 "json_too_deep", id="past-the-recursion-limit"),
    pytest.param(b'{"model": "m", "metadata": ' + b"[" * 900 + b"]" * 900 + b"}", None, "json_too_deep",
                 id="deep-but-parseable"),
])
def test_should_reject_bad_input_with_an_openai_style_400_naming_the_param(live, body, param, code):
    _, raw = make_key("paid")
    kwargs = {"content": body} if isinstance(body, bytes) else {"json": body}
    response = httpx.post(f"{live}/v1/chat/completions", headers={"Authorization": f"Bearer {raw}"},
                          timeout=30, **kwargs)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["param"], error["code"], error["type"]) == (param, code, "invalid_request_error")


def test_should_answer_404_for_an_unknown_model_and_401_for_missing_or_revoked_keys(live):
    key, raw = make_key("paid")
    client = _sdk(live, raw)
    with pytest.raises(openai.NotFoundError) as exc:
        client.chat.completions.create(model="gpt-9", messages=[{"role": "user", "content": "x"}])
    assert exc.value.code == "model_not_found" and exc.value.param == "model"

    missing = httpx.post(f"{live}/v1/chat/completions", json={"model": MODEL, "messages": []})
    assert missing.status_code == 401 and missing.json()["error"]["code"] == "missing_api_key"
    key.revoked_at = key.created_at
    key.save()
    with pytest.raises(openai.AuthenticationError) as exc:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
    assert exc.value.code == "revoked_api_key"


def test_should_serve_a_signed_in_browser_session_only_with_its_csrf_token(live):
    from django.test import Client

    from tests.factories import UserFactory

    browser = Client()
    browser.force_login(UserFactory())
    session = browser.cookies["sessionid"].value
    csrf = "c" * 32
    payload = {"model": MODEL, "messages": [{"role": "user", "content": "from the page"}]}
    ok = httpx.post(f"{live}/v1/chat/completions", json=payload, timeout=30,
                    cookies={"sessionid": session, "csrftoken": csrf},
                    headers={"X-CSRFToken": csrf, "Referer": live + "/", "Origin": live})
    assert ok.status_code == 200, ok.text
    assert ok.json()["choices"][0]["message"]["content"] == "egap eht morf"

    forged = httpx.post(f"{live}/v1/chat/completions", json=payload, timeout=30,
                        cookies={"sessionid": session})
    assert forged.status_code == 403
    assert forged.json()["error"]["code"] == "csrf_failed"


@pytest.mark.parametrize("tier", ["free", "paid"])
def test_should_give_a_browser_session_and_an_api_key_their_accounts_tier(live, tier):
    from django.test import Client

    from accounts.services import account_tier_set
    from inference_protocol import config
    from tests.factories import ApiKeyFactory, UserFactory

    user = UserFactory()
    account_tier_set(user=user, tier=tier)  # staff set it; the key below inherits it
    _, raw = ApiKeyFactory.create_with_raw(user=user)
    browser = Client()
    browser.force_login(user)
    csrf = "c" * 32
    payload = {"model": MODEL, "messages": [{"role": "user", "content": "limits"}], "max_tokens": 2}
    by_session = httpx.post(f"{live}/v1/chat/completions", json=payload, timeout=30,
                            cookies={"sessionid": browser.cookies["sessionid"].value, "csrftoken": csrf},
                            headers={"X-CSRFToken": csrf, "Referer": live + "/", "Origin": live})
    by_key = chat(live, raw, "limits", max_tokens=2)
    expected = str(config.current().rate_limits[tier]["requests_per_min"])
    for response in (by_session, by_key):
        assert response.status_code == 200, response.text
        assert response.headers["x-ratelimit-limit-requests"] == expected
    wait_for(lambda: UsageRecord.objects.filter(user=user, tier=tier).count() == 2,
             what="both calls' usage records, on the account's tier")
