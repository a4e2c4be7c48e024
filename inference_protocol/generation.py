"""The generation request: what the gateway sends a worker (JSON on the queue)."""

from __future__ import annotations

import dataclasses
from typing import Any

from core.vocabulary import Priority


@dataclasses.dataclass
class GenerationRequest:
    request_id: str
    model: str
    messages: list[dict[str, Any]]
    max_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    stop: list[str] = dataclasses.field(default_factory=list)
    seed: int | None = None
    priority: str = Priority.FREE.wire  # core.vocabulary.Priority, by name
    response_format: dict[str, Any] | None = None  # a constraint (inference_protocol.structured)
    n: int = 1                           # choices, each its own sequence (seeds seed, seed+1, ...)
    logprobs: int | None = None          # top alternatives per token with its log probability
    raw_prompt: bool = False             # /v1/completions: messages[-1] is raw text
    inputs: list[str] | None = None      # /v1/embeddings: one sequence per input, vectors back
    timeout_s: float | None = None     # the client's patience, measured from queueing
    # False (a non-streamed response): no token events, only the terminal one,
    # which carries the text; one event for the gateway to read, not one per step.
    stream: bool = True

    def to_dict(self) -> dict[str, Any]:
        # Shallow: the dict goes straight to JSON (dataclasses.asdict deep-copied
        # the messages, 20 us of a serve process's ~860 per request).
        return {name: getattr(self, name) for name in _FIELDS}


_FIELDS = tuple(field.name for field in dataclasses.fields(GenerationRequest))
