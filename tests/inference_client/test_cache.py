"""Prompt cache: exact per tenant; semantic with the polarity guard."""

import time

from core.redis import get_redis
from inference_client.prompt_cache import polarity_compatible
from tests.inference_client.conftest import chat, make_key


def test_should_serve_a_repeated_deterministic_request_from_the_cache_of_its_tenant_only(live):
    _, raw = make_key("paid")
    first = chat(live, raw, "cache me", temperature=0)
    time.sleep(0.3)  # the result is cached when its bookkeeping runs
    second = chat(live, raw, "cache me", temperature=0)
    assert (first.headers["x-cache"], second.headers["x-cache"]) == ("miss", "exact")
    assert second.json()["choices"][0]["message"]["content"] == "em ehcac"
    assert chat(live, make_key("paid")[1], "cache me", temperature=0).headers["x-cache"] == "miss"
    assert chat(live, raw, "cache me", temperature=0.7).headers["x-cache"] == "miss"


def test_should_not_answer_a_negated_question_from_the_semantic_cache(live):
    _, raw = make_key("paid")
    ask = lambda q: chat(live, raw, q, temperature=0, semantic_cache=True, timeout=60)  # noqa: E731
    assert ask("Is Paris the capital of France?").headers["x-cache"] == "miss"
    redis = get_redis()
    deadline = time.monotonic() + 60  # the server loads the embedding model on first use
    while not list(redis.scan_iter("pc:s:*")) and time.monotonic() < deadline:
        time.sleep(0.2)
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
