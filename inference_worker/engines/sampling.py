"""Pieces shared by the token-producing engines (llama.cpp, transformers).

- ``check_prompt_fits``: a prompt leaves room for one output token;
- ``Sampler``: temperature / top-p sampling from one row of logits, with a
  per-sequence RNG so a seeded request gives the same tokens whether it runs
  alone or in a batch (given the same logits);
- ``TextStream``: turns generated token bytes into text deltas, holding back
  incomplete UTF-8 and any tail that could still become a stop sequence, so a
  streamed client never sees text that a stop sequence later removes.
"""

from __future__ import annotations

import codecs

import numpy as np

from .base import EngineError, SamplingParams


def check_prompt_fits(tokens, context_window: int) -> None:
    """A prompt must leave room for at least one output token."""
    if len(tokens) >= context_window:
        raise EngineError(
            f"prompt is {len(tokens)} tokens; this model's context window is "
            f"{context_window} (prompt + at least one output token)",
            code="context_length_exceeded",
        )


class Sampler:
    """Samples one token id from a logits row for one sequence."""

    def __init__(self, params: SamplingParams):
        self.temperature = float(params.temperature)
        self.top_p = float(params.top_p)
        # One generator per sequence: batch composition must not change what a
        # seeded request draws.
        self.rng = np.random.default_rng(params.seed)

    def __call__(self, logits: np.ndarray) -> int:
        if self.temperature == 0.0:
            return int(np.argmax(logits))
        z = logits.astype(np.float64) / self.temperature
        z -= z.max()
        p = np.exp(z)
        p /= p.sum()
        if self.top_p < 1.0:
            order = np.argsort(-p, kind="stable")
            cum = np.cumsum(p[order])
            # Smallest prefix whose mass reaches top_p (always at least one).
            keep = int(np.searchsorted(cum, self.top_p)) + 1
            idx = order[:keep]
            q = p[idx] / p[idx].sum()
            return int(idx[self.rng.choice(keep, p=q)])
        return int(self.rng.choice(p.shape[0], p=p))


class TextStream:
    """Incremental detokenizer + stop-sequence matcher for one sequence."""

    def __init__(self, stop: tuple[str, ...] = ()):
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._stop = tuple(stop)
        self._longest = max((len(s) for s in self._stop), default=0)
        self._pending = ""   # decoded text not yet emitted (may start a stop)
        self.emitted = ""    # everything handed to the client so far
        self.stopped = False

    def push(self, data: bytes) -> str:
        """Add the bytes of one token; return the text that is safe to emit.

        After a stop sequence is seen, ``stopped`` is True and the returned
        delta ends right before it.
        """
        return self.push_text(self._decoder.decode(data))

    def push_text(self, text: str) -> str:
        """Like ``push`` for engines whose tokenizer yields text, not bytes."""
        if self.stopped:
            return ""
        self._pending += text
        return self._drain(final=False)

    def finish(self) -> str:
        """Flush everything held back (sequence ended for another reason)."""
        if self.stopped:
            return ""
        self._pending += self._decoder.decode(b"", final=True)
        return self._drain(final=True)

    def _drain(self, *, final: bool) -> str:
        text = self._pending
        if self._stop:
            # Earliest stop occurrence wins, as in OpenAI's API.
            hits = [i for i in (text.find(s) for s in self._stop) if i >= 0]
            if hits:
                cut = min(hits)
                self.stopped = True
                self._pending = ""
                self.emitted += text[:cut]
                return text[:cut]
            if not final:
                hold = self._held_back(text)
                self._pending = text[len(text) - hold:] if hold else ""
                out = text[: len(text) - hold]
                self.emitted += out
                return out
        self._pending = ""
        self.emitted += text
        return text

    def _held_back(self, text: str) -> int:
        # Longest suffix of text that is a proper prefix of some stop string.
        for n in range(min(len(text), self._longest - 1), 0, -1):
            tail = text[-n:]
            if any(s.startswith(tail) for s in self._stop):
                return n
        return 0
