"""Constrained decoding: a token matcher per sequence that masks the logits row
before sampling, so every completion matches its grammar (a JSON schema from
``response_format``, see inference_protocol.structured).

The matcher is llguidance's ``LLMatcher`` over the engine's own vocabulary
(built once per model, ~0.2 s for SmolLM2's 49k tokens). ``prepare`` compiles
a sequence's matcher on the caller's thread; each step then costs one mask
computation (0.3-1 ms) and one token consumption on the scheduler thread.
"""

from __future__ import annotations

import numpy as np

from inference_protocol import structured

from .base import EngineError


class TokenConstraint:
    """One sequence's grammar state."""

    def __init__(self, tokenizer, constraint: dict, n_vocab: int):
        from llguidance import LLMatcher
        from llguidance.numpy import allocate_token_bitmask

        self._matcher = LLMatcher(tokenizer, structured.grammar_for(constraint), log_level=0)
        if self._matcher.is_error():
            raise EngineError(f"response_format cannot be enforced: {self._matcher.get_error()}",
                              code="unsupported_schema")
        self._mask = allocate_token_bitmask(1, tokenizer.vocab_size)
        self.n_vocab = n_vocab

    def allowed(self) -> np.ndarray:
        """A boolean row over the vocabulary: the tokens the grammar allows next."""
        from llguidance.numpy import fill_next_token_bitmask

        fill_next_token_bitmask(self._matcher, self._mask, 0)
        bits = np.unpackbits(self._mask.view(np.uint8), bitorder="little")
        return bits[: self.n_vocab].astype(bool)

    def apply(self, logits: np.ndarray) -> np.ndarray:
        """``logits`` with every disallowed token at -inf (a copy)."""
        allowed = self.allowed()
        if not allowed.any():
            raise EngineError("the grammar allows no token here", code="grammar_dead_end")
        return np.where(allowed, logits, -np.inf)

    def consume(self, token: int) -> None:
        if not self._matcher.consume_token(token):
            raise EngineError(f"the grammar refused a sampled token: {self._matcher.get_error()}",
                              code="grammar_error")

    @property
    def complete(self) -> bool:
        """The grammar is satisfied and allows nothing more (only end of generation)."""
        return self._matcher.is_stopped()


def llama_tokenizer(model):
    """llguidance's tokenizer of a llama.cpp vocabulary, ending at any end-of-generation token."""
    from llguidance.llamacpp import lltokenizer_from_vocab

    ends = [t for t in range(model.n_vocab) if model.is_end_of_generation(t)]
    return lltokenizer_from_vocab(model.vocab, eos_token=ends or None)
