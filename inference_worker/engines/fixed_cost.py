"""FixedCostEngine: models a device batch call exactly, for capacity work and tests.

The contract it models is the seed's "at most N inputs per call, T seconds per
call": one ``step`` is one device call that takes ``call_s`` (plus
``per_token_s`` per output token of the longest output, since a batch decodes
in lockstep) whatever the batch size, and finishes every sequence in it.

The transformation is deterministic so results are checkable: the output of
an input string is the string reversed (``"abc" -> "cba"``), cut to
``max_tokens`` characters (finish_reason ``"length"``). Tokens are Unicode
code points, one per character.

Time passes through the injected ``sleep`` (``time.sleep`` by default; a
``VirtualClock.sleep`` in tests and the benchmark), so a simulated 200 ms call
costs no real time.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable

from inference_worker.engines.base import Capacity, Engine, EngineError, Sequence, StepResult


class FixedCostEngine(Engine):
    features = frozenset({"completions"})  # a raw prompt is reversed like a chat's last message

    def __init__(self, *, max_inputs: int = 50, call_s: float = 0.2, per_token_s: float = 0.0,
                 context_window: int = 4096, sleep: Callable[[float], None] = time.sleep,
                 fail_if: Callable[[Sequence], bool] | None = None, fail_rate: float = 0.0,
                 model_name: str = "fixed-cost"):
        """``fail_if``: inject device failures for tests; a call containing a
        sequence it matches raises (after taking its time, as a real failed
        call would), failing the whole call like a poisoned input on a GPU.
        ``fail_rate`` (settable in a spec, e.g. a canary version that fails 30%):
        that share of requests fails, chosen by a hash of the request id, so a
        request fails every time it is tried and the scheduler's split isolates it."""
        if not 0 <= fail_rate <= 1:
            raise ValueError("fail_rate must be between 0 and 1")
        if fail_rate and fail_if is None:
            def fail_if(seq, threshold=int(fail_rate * 10_000)):
                return zlib.crc32(seq.id.encode()) % 10_000 < threshold
        if max_inputs < 1 or call_s < 0 or per_token_s < 0 or context_window < 2:
            raise ValueError("invalid FixedCostEngine settings")
        self.max_inputs = max_inputs
        self.call_s = call_s
        self.per_token_s = per_token_s
        self.context_window = context_window
        self.model_name = model_name
        self._sleep = sleep
        self._fail_if = fail_if
        self.calls = 0
        self.batch_sizes: list[int] = []
        self.busy_s = 0.0

    @classmethod
    def checkpoint_options(cls, directory: str, files: list[str]) -> dict:
        """A fixed-cost device loads no weights: a checkpoint is fetched and
        verified like any other (the readiness gate), then unused."""
        return {}

    @property
    def capacity(self) -> Capacity:
        return Capacity(max_batch_size=self.max_inputs,
                        max_batch_tokens=self.max_inputs * self.context_window,
                        context_window=self.context_window, fixed_batch=True)

    @staticmethod
    def input_of(seq: Sequence) -> str:
        if not seq.messages:
            raise EngineError("empty input: no messages", code="empty_input")
        content = seq.messages[-1].get("content")
        if not isinstance(content, str) or not content:
            raise EngineError("empty input: the last message has no text", code="empty_input")
        return content

    def prepare(self, seq: Sequence) -> None:
        text = self.input_of(seq)
        if len(text) >= self.context_window:
            raise EngineError(f"input of {len(text)} tokens does not fit the context window "
                              f"({self.context_window})", code="context_length_exceeded")
        if len(text) + seq.params.max_tokens > self.context_window:
            raise EngineError(
                f"max_tokens {seq.params.max_tokens} + input {len(text)} exceeds the context "
                f"window ({self.context_window})", code="max_tokens_exceeded")
        seq.prompt_tokens = [ord(c) for c in text]

    def step(self, running: list[Sequence], new: list[Sequence]) -> list[StepResult]:
        batch = running + new
        if len(batch) > self.max_inputs:
            raise EngineError(f"batch of {len(batch)} exceeds {self.max_inputs} inputs per call",
                              code="batch_too_large")
        outputs = [self.input_of(s)[::-1][: s.params.max_tokens] for s in batch]
        duration = self.call_s + self.per_token_s * max((len(o) for o in outputs), default=0)
        self._sleep(duration)
        self.calls += 1
        self.batch_sizes.append(len(batch))
        self.busy_s += duration
        if self._fail_if is not None:
            bad = [s.id for s in batch if self._fail_if(s)]
            if bad:
                raise EngineError(f"device call failed on input(s) {', '.join(bad)}",
                                  code="device_error")
        results = []
        for seq, out in zip(batch, outputs, strict=True):
            ids = [ord(c) for c in out]
            seq.output_tokens.extend(ids)
            seq.output_text += out
            truncated = len(out) < len(seq.prompt_tokens)
            results.append(StepResult(seq_id=seq.id, text=out, token_ids=ids, finished=True,
                                      finish_reason="length" if truncated else "stop"))
        return results
