"""Prompt cache: exact per tenant; semantic with the polarity guard."""

import json

import pytest

from core.error_codes import DomainError
from core.redis import get_redis
from inference_client.prompt_cache import polarity_compatible, semantic_scope
from tests.inference_client.conftest import EMBED, MODEL, MODELS, chat, make_key, uvicorn_server
from tests.polling import wait_for


@pytest.mark.needs_services  # the prompt cache lives in Redis
def test_should_serve_a_repeated_deterministic_request_from_the_cache_of_its_tenant_only(live):
    _, raw = make_key("paid")
    first = chat(live, raw, "cache me", temperature=0)
    # The result is cached when its bookkeeping runs, after the response.
    wait_for(lambda: list(get_redis().scan_iter("pc:x:*")), timeout=10, what="the cache entry")
    second = chat(live, raw, "cache me", temperature=0)
    assert (first.headers["x-cache"], second.headers["x-cache"]) == ("miss", "exact")
    assert second.json()["choices"][0]["message"]["content"] == "em ehcac"
    assert chat(live, make_key("paid")[1], "cache me", temperature=0).headers["x-cache"] == "miss"
    assert chat(live, raw, "cache me", temperature=0.7).headers["x-cache"] == "miss"


@pytest.mark.needs_services  # the prompt cache lives in Redis
def test_should_not_answer_a_negated_question_from_the_semantic_cache(embedder):
    # SEMANTIC_CACHE_EMBEDDING_MODEL is EMBED: all-MiniLM-L6-v2 on llama.cpp, on its own worker.
    _, raw = make_key("paid")
    ask = lambda q: chat(embedder, raw, q, temperature=0, semantic_cache=True, timeout=60)  # noqa: E731
    assert ask("Is Paris the capital of France?").headers["x-cache"] == "miss"
    redis = get_redis()
    wait_for(lambda: list(redis.scan_iter("pc:s:*")), timeout=30, interval=0.2, what="the semantic entry")
    paraphrase = ask("Is Paris the capital city of France?")  # cosine 0.98
    assert paraphrase.headers["x-cache"] == "semantic"
    assert paraphrase.json()["choices"][0]["message"]["content"] == "?ecnarF fo latipac eht siraP sI"
    # Cosine 0.954, above the 0.95 threshold: only the polarity guard stops this one.
    negated = ask("Is Paris not the capital of France?")
    assert negated.headers["x-cache"] == "miss"
    assert negated.json()["choices"][0]["message"]["content"] == "?ecnarF fo latipac eht ton siraP sI"


@pytest.mark.needs_services  # the prompt cache lives in Redis
def test_should_answer_without_the_semantic_cache_when_no_worker_embeds_in_time(embedder, django_db_blocker):
    _, raw = make_key("paid")
    ask = lambda base, q: chat(base, raw, q, temperature=0, semantic_cache=True, timeout=60)  # noqa: E731
    assert ask(embedder, "Is Paris the capital of France?").headers["x-cache"] == "miss"
    wait_for(lambda: list(get_redis().scan_iter("pc:s:*")), timeout=30, what="the semantic entry")
    # A server whose embedding model has no worker: the lookup gives up, the request goes on.
    models = json.dumps({**MODELS, "nobody-embeds": {"engine": "llamacpp_embeddings"}})
    env = {"INFERENCE_MODELS": models, "SEMANTIC_CACHE_EMBEDDING_MODEL": "nobody-embeds",
           "SEMANTIC_CACHE_EMBED_TIMEOUT_S": "0.5"}
    with uvicorn_server(django_db_blocker, **env) as base:
        paraphrase = ask(base, "Is Paris the capital city of France?")
    assert paraphrase.status_code == 200, paraphrase.text
    assert paraphrase.headers["x-cache"] == "miss"
    assert paraphrase.json()["choices"][0]["message"]["content"] == "?ecnarF fo ytic latipac eht siraP sI"


@pytest.mark.parametrize("embedder", ["no-such-model", MODEL])
def test_a_semantic_cache_without_an_embedding_model_is_a_501_naming_the_setting(settings, embedder):
    settings.INFERENCE_MODELS = MODELS
    settings.SEMANTIC_CACHE_EMBEDDING_MODEL = embedder
    with pytest.raises(DomainError) as e:
        semantic_scope(tenant="u1", model=MODEL, messages=[{"role": "user", "content": "q"}], params={})
    assert (e.value.status, e.value.code) == (501, "semantic_cache_unavailable")
    assert e.value.field == "semantic_cache"
    assert "SEMANTIC_CACHE_EMBEDDING_MODEL" in e.value.message
    settings.SEMANTIC_CACHE_EMBEDDING_MODEL = EMBED
    assert semantic_scope(tenant="u1", model=MODEL, messages=[{"role": "user", "content": "q"}], params={})


def test_polarity_guard_rejects_negation_numbers_and_swapped_roles():
    assert polarity_compatible("Is Paris the capital of France?", "Is Paris the capital city of France?")
    assert not polarity_compatible("Is Paris the capital of France?", "Is Paris not the capital of France?")
    assert not polarity_compatible("Is Paris the capital of France?", "Isn't Paris the capital of France?")
    assert not polarity_compatible("Is 7 a prime?", "Is 9 a prime?")
    assert not polarity_compatible("Is Lyon bigger than Paris?", "Is Paris bigger than Lyon?")
