"""Prompt cache for deterministic (temperature 0) requests, per tenant.

Exact: a hash of (tenant, model, generation params, rendered messages) ->
result, in Redis with PROMPT_CACHE_TTL_S.

Semantic (opt-in): the last user message is embedded by the catalog's model
SEMANTIC_CACHE_EMBEDDING_MODEL (all-MiniLM-L6-v2 by default: L2-normalised, so
cosine = dot product), a generation on its queue that its worker's scheduler
batches with /v1/embeddings inputs; everything else (model, params, the
earlier messages) must match exactly, so it is part of the scope key. A hit
needs cosine >= the model's threshold AND `polarity_compatible`: embeddings
put "Is Paris the capital of France?" and "Is Paris not the capital of
France?" at cosine ~0.97, so the guard compares negations, numbers and
content words, and refuses the same content words in another order
("Is A bigger than B?" vs "Is B bigger than A?").
"""

from __future__ import annotations

import base64
import json
import logging
import re
import uuid
from collections.abc import Awaitable
from typing import cast

import numpy as np
from django.conf import settings

from core.canonical import canonical_hash
from core.error_codes import DomainError
from core.redis import get_aredis
from inference_protocol import config, features
from inference_protocol.backend import get_backend
from inference_protocol.generation import GenerationRequest

logger = logging.getLogger(__name__)

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
    embedder = settings.SEMANTIC_CACHE_EMBEDDING_MODEL
    spec = config.current().models.get(embedder)
    # A model served per version has no queue of its plain name.
    if spec is None or features.unsupported(spec, {"embeddings"}) or spec.get("versions"):
        raise DomainError(f"The semantic cache needs SEMANTIC_CACHE_EMBEDDING_MODEL ({embedder!r}) to name "
                          "an embedding model of the catalog without versions.",
                          code="semantic_cache_unavailable", field="semantic_cache")
    return f"pc:s:{tenant}:{_scope_hash(model, params, messages[:-1], messages[-1]['role'])}"


async def exact_get(key: str) -> dict | None:
    raw = await get_aredis().get(key)
    return json.loads(raw) if raw else None


async def exact_put(key: str, result: dict) -> None:
    await get_aredis().set(key, json.dumps(result), ex=settings.PROMPT_CACHE_TTL_S)


# ---- semantic ------------------------------------------------------------------

async def embed(text: str, *, priority: str) -> np.ndarray | None:
    """The vector of ``text`` from SEMANTIC_CACHE_EMBEDDING_MODEL's worker, or None
    when none came within SEMANTIC_CACHE_EMBED_TIMEOUT_S: the cache is then skipped,
    the request itself goes on. The gateway's own request: no usage record."""
    request_id = f"semantic-{uuid.uuid4().hex}"
    timeout_s = settings.SEMANTIC_CACHE_EMBED_TIMEOUT_S
    backend = get_backend()
    request = GenerationRequest(request_id=request_id, model=settings.SEMANTIC_CACHE_EMBEDDING_MODEL,
                                messages=[{"role": "user", "content": text}], max_tokens=1, seed=0,
                                inputs=[text], priority=priority, timeout_s=timeout_s, stream=False)
    terminal: dict = {}
    try:
        await backend.asubmit(request)
        async for event in backend.aevents(request_id, timeout_s=timeout_s):
            terminal = event
    except Exception as exc:  # the broker or the event log is away
        terminal = {"type": "error", "code": "queue_unavailable", "message": f"{type(exc).__name__}: {exc}"}
    if terminal.get("type") == "done":
        return np.asarray(terminal["result"]["choices"][0]["embedding"], dtype=np.float32)
    logger.warning("semantic cache skipped: no embedding from %s (%s: %s)",
                   settings.SEMANTIC_CACHE_EMBEDDING_MODEL, terminal.get("code"), terminal.get("message"))
    return None


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


async def semantic_get(*, scope: str, question: str, model: str, priority: str) -> tuple[dict, float] | None:
    raws = await cast(Awaitable[list[bytes]], get_aredis().lrange(scope, 0, -1))  # an async client's reply
    if not raws:
        return None
    vector = await embed(question, priority=priority)
    if vector is None:
        return None
    best, best_score = None, threshold_for(model)
    for raw in raws:
        entry = json.loads(raw)
        score = float(np.dot(vector, np.frombuffer(base64.b64decode(entry["v"]), dtype=np.float32)))
        if score >= best_score and polarity_compatible(question, entry["q"]):
            best, best_score = entry, score
    return (best["result"], best_score) if best else None


async def semantic_put(*, scope: str, question: str, result: dict, priority: str) -> None:
    vector = await embed(question, priority=priority)
    if vector is None:
        return
    entry = json.dumps({"q": question, "v": base64.b64encode(vector.tobytes()).decode(), "result": result})
    pipe = get_aredis().pipeline(transaction=False)
    pipe.lpush(scope, entry)
    pipe.ltrim(scope, 0, settings.SEMANTIC_CACHE_MAX_ENTRIES - 1)
    pipe.expire(scope, settings.PROMPT_CACHE_TTL_S)
    await pipe.execute()
