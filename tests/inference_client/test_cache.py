"""Prompt cache: exact per tenant; semantic with the polarity guard."""

import pytest

from core.redis import get_redis
from inference_client.prompt_cache import polarity_compatible
from tests.inference_client.conftest import chat, make_key
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
def test_should_not_answer_a_negated_question_from_the_semantic_cache(live):
    _, raw = make_key("paid")
    ask = lambda q: chat(live, raw, q, temperature=0, semantic_cache=True, timeout=60)  # noqa: E731
    assert ask("Is Paris the capital of France?").headers["x-cache"] == "miss"
    redis = get_redis()
    # The server loads the embedding model on first use.
    wait_for(lambda: list(redis.scan_iter("pc:s:*")), timeout=60, interval=0.2, what="the semantic entry")
    paraphrase = ask("Is Paris the capital city of France?")  # cosine 0.98
    assert paraphrase.headers["x-cache"] == "semantic"
    assert paraphrase.json()["choices"][0]["message"]["content"] == "?ecnarF fo latipac eht siraP sI"
    # Cosine 0.954, above the 0.95 threshold: only the polarity guard stops this one.
    negated = ask("Is Paris not the capital of France?")
    assert negated.headers["x-cache"] == "miss"
    assert negated.json()["choices"][0]["message"]["content"] == "?ecnarF fo latipac eht ton siraP sI"


def test_polarity_guard_rejects_negation_numbers_and_swapped_roles():
    assert polarity_compatible("Is Paris the capital of France?", "Is Paris the capital city of France?")
    assert not polarity_compatible("Is Paris the capital of France?", "Is Paris not the capital of France?")
    assert not polarity_compatible("Is Paris the capital of France?", "Isn't Paris the capital of France?")
    assert not polarity_compatible("Is 7 a prime?", "Is 9 a prime?")
    assert not polarity_compatible("Is Lyon bigger than Paris?", "Is Paris bigger than Lyon?")
