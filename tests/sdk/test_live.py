"""The SDK against a live server (uvicorn + PostgreSQL + Redis, and a Celery
worker for runs): moved and removed labels, 502s and timeouts from a proxy in
front of the server, a revoked key. The SDK's clock is a manual one, so "60 s
later" needs no sleep; background refreshes are awaited with wait_for."""

from __future__ import annotations

import time

import httpx
import pytest
from django.db import connections
from promptyard import (
    ApiError,
    AsyncPromptyard,
    AuthenticationError,
    LabelNotFound,
    PromptNotFound,
    Promptyard,
    RenderError,
    ServerUnavailable,
)

from playground import services
from tests.factories import PromptFactory
from tests.inference_client.conftest import make_key
from tests.polling import wait_for
from tests.sdk.conftest import MODEL

pytestmark = pytest.mark.needs_services  # a live server on PostgreSQL and Redis, a worker on RabbitMQ


def _setup(body="Hello {{name}}, be {{tone}}.", **fields):
    key, raw = make_key("paid")
    prompt = PromptFactory(owner=key.user)
    v1 = services.version_create(prompt=prompt, author=key.user, body=body, model_name=MODEL,
                                 system="You are {{tone}}.", variables={"name": None, "tone": "kind"},
                                 temperature=0.0, max_tokens=64, stop=["@@"], **fields)
    v2 = services.version_create(prompt=prompt, author=key.user, body="v2 {{name}}", parent_id=v1.pk,
                                 model_name=MODEL, variables={"name": "Bob"})
    services.label_move(prompt=prompt, name="production", version_id=v1.pk, expected_version_id=None,
                        actor=key.user)
    return key, raw, prompt, v1, v2


def _refreshed(py, prompt, label="production"):
    """The cache's entry once no background refresh is running."""
    entry = py.cache.peek((str(prompt.pk), label))
    return entry if entry is not None and not entry.refreshing else None


def test_should_return_the_labelled_version_render_it_as_the_server_does_and_run_it(live, worker):
    key, raw, prompt, v1, _ = _setup()
    with Promptyard(live, raw) as py:
        version = py.get_prompt(prompt.pk)
        assert (version.id, version.number, version.model, version.source, version.branch) == (
            str(v1.pk), 1, MODEL, "server", "main")
        assert version.template == "Hello {{name}}, be {{tone}}." and version.system == "You are {{tone}}."
        assert version.parameters == {"temperature": 0.0, "max_tokens": 64, "stop": ["@@"]}
        assert version.variables == {"name": None, "tone": "kind"} and version.tools == []
        assert py.get_prompt(prompt.pk).source == "cache"

        values = {"name": "Ada {{tone}}", "tone": 3}
        server = httpx.post(f"{live}/api/prompts/{prompt.pk}/versions/{v1.pk}/render",
                            json={"variables": values}, headers={"Authorization": f"Bearer {raw}"}).json()
        assert version.render(values) == server
        with pytest.raises(RenderError) as missing:
            version.render({})
        assert (missing.value.code, missing.value.names) == ("missing_variables", ["name"])

        reply = version.run({"name": "Ada"})
        assert reply["choices"][0]["message"]["content"] == "Hello Ada, be kind."[::-1]
        chunks = list(version.run({"name": "Ada"}, stream=True))
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
        assert text == "Hello Ada, be kind."[::-1]


def test_should_return_the_versions_tools_and_send_them_on_a_run(live):
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather now",
                                                "parameters": {"type": "object", "properties": {
                                                    "city": {"type": "string"}}}}}]
    key, raw, prompt, v1, _ = _setup(tools=tools)
    with Promptyard(live, raw) as py:
        version = py.get_prompt(prompt.pk)
        assert (version.id, version.tools) == (str(v1.pk), tools)
        assert version.chat_body({"name": "Ada"})["tools"] == tools
        # The tools reach /v1 (whose fixed-cost engine has no grammar for them, and says so).
        with pytest.raises(ApiError) as refused:
            version.run({"name": "Ada"})
        assert (refused.value.code, refused.value.status) == ("unsupported_parameter", 400)
        assert "tools" in str(refused.value)


def test_should_render_a_conversation_with_turns_and_a_seed_as_the_server_does(live):
    turns = [{"role": "user", "content": "Example for {{name}}"}, {"role": "assistant", "content": "Done."}]
    key, raw, prompt, v1, _ = _setup(messages=turns, seed=9)
    with Promptyard(live, raw) as py:
        version = py.get_prompt(prompt.pk)
        assert version.messages == tuple(turns) and version.parameters["seed"] == 9
        server = httpx.post(f"{live}/api/prompts/{prompt.pk}/versions/{v1.pk}/render",
                            json={"variables": {"name": "Ada"}},
                            headers={"Authorization": f"Bearer {raw}"}).json()
        assert version.render({"name": "Ada"}) == server
        assert [m["role"] for m in server["messages"]] == ["system", "user", "assistant", "user"]
        assert version.chat_body({"name": "Ada"})["seed"] == 9


def test_should_serve_stale_within_the_bound_then_the_moved_label_after_one_refresh(live, clock):
    key, raw, prompt, v1, v2 = _setup()
    with Promptyard(live, raw, ttl=60, max_stale=30, clock=clock) as py:
        assert py.get_prompt(prompt.pk).id == str(v1.pk)
        services.label_move(prompt=prompt, name="production", version_id=v2.pk, expected_version_id=v1.pk,
                            actor=key.user)
        clock.advance(59)
        assert py.get_prompt(prompt.pk).id == str(v1.pk)  # fresh for ttl: the contract, not a bug
        clock.advance(2)
        stale = py.get_prompt(prompt.pk)
        assert (stale.id, stale.source, stale.stale) == (str(v1.pk), "stale", True)
        wait_for(lambda: _refreshed(py, prompt), timeout=10, what="the background refresh")
        moved = py.get_prompt(prompt.pk)
        assert (moved.id, moved.source, moved.template) == (str(v2.pk), "cache", "v2 {{name}}")


def test_should_raise_label_not_found_after_removal_and_never_serve_the_old_version(live, clock, proxy):
    key, raw, prompt, v1, _ = _setup()
    with Promptyard(proxy.url, raw, ttl=60, max_stale=600, clock=clock) as py:
        assert py.get_prompt(prompt.pk).id == str(v1.pk)
        removed = httpx.delete(f"{live}/api/prompts/{prompt.pk}/labels/production",
                               headers={"Authorization": f"Bearer {raw}"})
        assert removed.status_code == 204
        clock.advance(61)
        assert py.get_prompt(prompt.pk).stale  # before the refresh has answered
        wait_for(lambda: _refreshed(py, prompt), timeout=10, what="the background refresh")
        with pytest.raises(LabelNotFound) as gone:
            py.get_prompt(prompt.pk)
        assert gone.value.code == "label_not_found" and gone.value.status == 404
        # The server goes away: still not the old version, even with a long max_stale.
        proxy.set("502")
        clock.advance(61)
        with pytest.raises(ServerUnavailable):
            py.get_prompt(prompt.pk)
        fallback = py.get_prompt(prompt.pk, fallback="Hi {{name}}")
        assert (fallback.source, fallback.id, fallback.template) == ("fallback", None, "Hi {{name}}")


def test_should_survive_502s_within_the_bound_and_use_the_fallback_after_it(live, clock, proxy):
    key, raw, prompt, v1, _ = _setup()
    with Promptyard(proxy.url, raw, ttl=60, max_stale=120, clock=clock) as py:
        assert py.get_prompt(prompt.pk).id == str(v1.pk)
        proxy.set("502")
        clock.advance(100)
        assert py.get_prompt(prompt.pk).source == "stale"
        wait_for(lambda: _refreshed(py, prompt), timeout=10, what="the failed refresh")
        entry = py.cache.peek((str(prompt.pk), "production"))
        assert entry.failures == 1 and entry.value.id == str(v1.pk)
        clock.advance(79)  # 179 s old: still inside ttl + max_stale
        assert py.get_prompt(prompt.pk).id == str(v1.pk)
        clock.advance(2)  # past the bound: no stale copy any more
        with pytest.raises(ServerUnavailable) as down:
            py.get_prompt(prompt.pk)
        assert down.value.status == 502
        fallback = py.get_prompt(prompt.pk, fallback={"template": "Hi {{name}}", "model": MODEL})
        assert fallback.is_fallback and "502" in fallback.error
        assert fallback.render({"name": "Ada"})["body"] == "Hi Ada"
        proxy.set("pass")
        back = py.get_prompt(prompt.pk)
        assert (back.source, back.id) == ("server", str(v1.pk))


def test_should_fall_back_within_the_timeout_when_the_server_hangs(live, proxy):
    key, raw, prompt, v1, _ = _setup()
    proxy.set("hang")
    with Promptyard(proxy.url, raw, timeout=0.5) as py:
        start = time.monotonic()
        version = py.get_prompt(prompt.pk, fallback="Hi {{name}}")
        assert time.monotonic() - start < 5
        assert version.is_fallback and "ReadTimeout" in version.error
        with pytest.raises(ServerUnavailable) as hung:
            py.get_prompt(prompt.pk)
        assert hung.value.code == "timeout"


def test_should_say_clearly_when_the_key_is_revoked_or_the_prompt_unknown(live):
    key, raw, prompt, v1, _ = _setup()
    with Promptyard(live, raw) as py:
        with pytest.raises(PromptNotFound):
            py.get_prompt("00000000-0000-0000-0000-000000000000")
        with pytest.raises(LabelNotFound):
            py.get_prompt(prompt.pk, label="staging")
        revoked = httpx.delete(f"{live}/api/accounts/keys/{key.pk}",
                               headers={"Authorization": f"Bearer {raw}"})
        assert revoked.status_code in (200, 204), revoked.text
        with pytest.raises(AuthenticationError) as refused:
            Promptyard(live, raw).get_prompt(prompt.pk)
        assert refused.value.status == 401


async def test_should_behave_the_same_with_the_async_client(live, worker, clock):
    from asgiref.sync import sync_to_async

    key, raw, prompt, v1, v2 = await sync_to_async(_setup)()
    async with AsyncPromptyard(live, raw, ttl=60, max_stale=30, clock=clock) as py:
        assert (await py.get_prompt(prompt.pk)).id == str(v1.pk)
        await sync_to_async(services.label_move)(prompt=prompt, name="production", version_id=v2.pk,
                                                  expected_version_id=v1.pk, actor=key.user)
        clock.advance(61)
        assert (await py.get_prompt(prompt.pk)).stale
        await py.wait_refreshed()
        version = await py.get_prompt(prompt.pk)
        assert (version.id, version.source) == (str(v2.pk), "cache")
        chunks = [c async for c in await version.arun({"name": "Ada"}, stream=True)]
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
        assert text == "v2 Ada"[::-1]
    # The ORM ran on asgiref's executor thread: close its connection before the flush.
    await sync_to_async(connections.close_all)()


def test_should_keep_each_user_on_one_variant_of_a_split_and_record_it_in_usage(live, worker):
    from inference_client.models import UsageRecord

    key, raw, prompt, v1, v2 = _setup()
    variants = [{"version": str(v1.pk), "weight": 50}, {"version": str(v2.pk), "weight": 50}]
    services.label_split(prompt=prompt, name="production", expected_version_id=v1.pk, actor=key.user,
                         variants=variants)
    auth = {"Authorization": f"Bearer {raw}"}
    base = f"{live}/api/prompts/{prompt.pk}/labels/production"
    with Promptyard(live, raw) as py:
        seen = {}
        for user in [f"u{i}" for i in range(12)]:
            mine = py.get_prompt(prompt.pk, user=user)
            assert mine.id == httpx.get(base, params={"user": user}, headers=auth).json()["version"]["id"]
            assert py.get_prompt(prompt.pk, user=user).id == mine.id  # the same on every call
            assert mine.weight == 50 and mine.split == ((str(v1.pk), 50), (str(v2.pk), 50))
            seen[user] = mine
        assert {v.id for v in seen.values()} == {str(v1.pk), str(v2.pk)}
        a = next(v for v in seen.values() if v.id == str(v2.pk))
        assert a.run({"name": "Ada"})["choices"][0]["message"]["content"] == "v2 Ada"[::-1]
    user = next(u for u, v in seen.items() if v.id == str(v1.pk))
    ran = httpx.post(f"{base}/run", json={"variables": {"name": "Bo"}, "user": user}, headers=auth,
                     timeout=30)
    assert ran.status_code == 200 and ran.headers["x-prompt-version"] == str(v1.pk)
    wait_for(lambda: UsageRecord.objects.filter(user=key.user).count() == 2, timeout=15, what="usage records")
    records = UsageRecord.objects.filter(user=key.user).values_list("prompt_version", "prompt_label")
    assert sorted(records) == sorted([(v1.pk, "production"), (v2.pk, "production")])
    assert UsageRecord.objects.get(user=key.user, prompt_version=v1.pk).end_user == user
    # Both arms' runs are in the generations log with their variables: the SDK's (X-Prompt-Variables) and
    # the run by reference.
    from generations.models import Generation

    mine = Generation.objects.filter(user=key.user)
    wait_for(lambda: mine.count() == 2, timeout=15, what="both generations")
    logged = list(mine.values_list("version_id", "label", "source", "variables"))
    assert sorted(logged, key=str) == sorted([(v2.pk, "production", "v1", {"name": "Ada"}),
                                              (v1.pk, "production", "run", {"name": "Bo"})], key=str)
    grouped = httpx.get(f"{live}/v1/usage", params={"group_by": "prompt_version"}, headers=auth).json()
    assert {(g["prompt_version"], g["requests"]) for g in grouped["by_prompt_version"]} == {
        (str(v1.pk), 1), (str(v2.pk), 1)}
    bad = httpx.post(f"{live}/v1/chat/completions", headers={**auth, "X-Prompt-Version": "v1"},
                     json={"model": MODEL, "messages": [{"role": "user", "content": "x"}]})
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, "invalid_prompt_ref")
