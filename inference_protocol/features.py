"""Which optional request features each engine kind implements.

The gateway refuses a request for a feature its model's engine does not
implement (a 400 naming the parameter) before anything is queued; each engine
declares the same set (``Engine.features``) and refuses it again at submit.
"""

from __future__ import annotations

from typing import Any

ENGINE_FEATURES: dict[str, frozenset[str]] = {
    "llamacpp": frozenset({"response_format", "logprobs", "completions", "tools"}),
    "transformers": frozenset(),
    "upstream": frozenset(),
    # Its output is the reversed input, of a raw prompt as of a chat's last message.
    "fixed_cost": frozenset({"completions"}),
    # Vectors only: they generate no text.
    "embeddings": frozenset({"embeddings"}),
    "llamacpp_embeddings": frozenset({"embeddings"}),
}


# Engines that generate text (every kind but the embedding ones).
GENERATES = frozenset({"llamacpp", "transformers", "upstream", "fixed_cost"})


def unsupported(spec: dict[str, Any], wanted: set[str]) -> list[str]:
    """The features of ``wanted`` that the engine of ``spec`` does not implement."""
    have = ENGINE_FEATURES.get(spec.get("engine") or "", frozenset())
    return sorted(wanted - have)


def generates(spec: dict[str, Any]) -> bool:
    return spec.get("engine") in GENERATES
