"""Idempotency-Key: retries during and after a generation return one result."""

import concurrent.futures
import json

import httpx
import pytest

from core.redis import get_redis
from inference_client.models import UsageRecord
from inference_protocol.events import FINISHED_LOG_TTL_S
from tests.inference_client.conftest import MODEL, chat, make_key
from tests.polling import wait_for

pytestmark = pytest.mark.needs_services  # idempotency keys live in Redis; the live gateway


def test_should_return_one_result_to_retries_during_and_after_a_generation(live):
    key, raw = make_key("paid")
    headers = {"Idempotency-Key": "order-42"}
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        # The first call and two retries racing it, then one after it finished.
        futures = [pool.submit(chat, live, raw, "once only", headers=headers, max_tokens=50)
                   for _ in range(3)]
        during = [f.result() for f in futures]
    after = chat(live, raw, "once only", headers=headers, max_tokens=50)
    bodies = [r.json() for r in [*during, after]]
    assert all(r.status_code == 200 for r in [*during, after]), [r.text for r in during]
    assert len({b["id"] for b in bodies}) == 1
    assert {b["choices"][0]["message"]["content"] for b in bodies} == {"ylno ecno"}
    assert after.headers["Idempotent-Replayed"] == "true"

    # The record is written after the response; only the first request writes one.
    wait_for(UsageRecord.objects.filter(api_key=key).exists, timeout=10, what="the usage record")
    assert UsageRecord.objects.filter(api_key=key).count() == 1  # one generation, one charge
    # Another body under the same key is refused (IETF draft: 422).
    other = chat(live, raw, "something else", headers=headers)
    assert other.status_code == 422 and other.json()["error"]["code"] == "idempotency_key_reused"
    # Keys are scoped per API key: another key may use the same value.
    assert chat(live, make_key("paid")[1], "something else", headers=headers).status_code == 200


def test_should_replay_a_streamed_generation_to_a_retry(live):
    _, raw = make_key("paid")
    body = {"model": "gw-fixed-cost", "messages": [{"role": "user", "content": "stream me"}], "stream": True}
    headers = {"Authorization": f"Bearer {raw}", "Idempotency-Key": "s-1"}
    first = httpx.post(f"{live}/v1/chat/completions", json=body, headers=headers, timeout=30).text
    again = httpx.post(f"{live}/v1/chat/completions", json=body, headers=headers, timeout=30).text
    assert first.endswith("data: [DONE]\n\n") and again.endswith("data: [DONE]\n\n")
    assert '"content":"em maerts"' in first and '"content":"em maerts"' in again


def _choices(sse: str) -> dict[int, str]:
    texts: dict[int, str] = {}
    for line in sse.splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[len("data: "):])["choices"]:
                text = choice["delta"].get("content") or ""
                texts[choice["index"]] = texts.get(choice["index"], "") + text
    return texts


def test_should_answer_a_retry_from_the_result_once_the_log_has_expired(live):
    """A finished generation's log is kept a minute, its result a day: a retry
    after the log has gone gets each choice whole from the result."""
    _, raw = make_key("paid")
    body = {"model": MODEL, "messages": [{"role": "user", "content": "two of us"}], "stream": True, "n": 2}
    headers = {"Authorization": f"Bearer {raw}", "Idempotency-Key": "s-2"}
    first = httpx.post(f"{live}/v1/chat/completions", json=body, headers=headers, timeout=30)
    rid = json.loads(first.text.split("\n")[0][len("data: "):])["id"].removeprefix("chatcmpl-")
    redis = get_redis()
    assert 0 < redis.ttl(f"gen:{rid}:events") <= FINISHED_LOG_TTL_S < redis.ttl(f"gen:{rid}:result")
    redis.delete(f"gen:{rid}:events")  # its expiry, early
    again = httpx.post(f"{live}/v1/chat/completions", json=body, headers=headers, timeout=30)
    assert again.headers["Idempotent-Replayed"] == "true" and again.text.endswith("data: [DONE]\n\n")
    assert _choices(first.text) == _choices(again.text) == {0: "su fo owt", 1: "su fo owt"}
    whole = chat(live, raw, "two of us", headers={"Idempotency-Key": "s-2"}, stream=False, n=2)
    assert whole.status_code == 422  # another body (not streamed): refused, as before
