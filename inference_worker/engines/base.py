"""The engine interface: the one thing a device-owning scheduler talks to.

An engine owns one device (a GPU, or the CPU in the embedded default) and is
driven by exactly one scheduler thread, one ``step`` at a time. The scheduler
decides *which* sequences run; the engine decides *how* to run them.

A step takes the sequences that were already running (their state, e.g. a KV
cache, lives inside the engine keyed by ``Sequence.id``) plus new sequences to
prefill, and returns one ``StepResult`` per sequence: the tokens produced in
this step and whether the sequence finished. Continuous-batching engines
produce one token per sequence per step; fixed-batch engines (one device call
maps a list of inputs to a list of outputs) finish every sequence in its
first step.
"""

from __future__ import annotations

import abc
import dataclasses
import time
from typing import Any

from inference_protocol import validation


class EngineError(Exception):
    """A request-level failure with a stable code (bad input, too long...)."""

    code = "engine_error"

    def __init__(self, message: str, *, code: str | None = None):
        super().__init__(message)
        if code:
            self.code = code


class EngineLoadError(EngineError):
    """The engine could not load its model: the worker must not serve."""

    code = "engine_load_failed"


@dataclasses.dataclass(frozen=True)
class SamplingParams:
    max_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int | None = None
    # A grammar the output must match (inference_protocol.structured), or None.
    constraint: dict | None = None
    # Log probabilities of each output token with this many alternatives (None: off).
    logprobs: int | None = None
    # The prompt is raw text (/v1/completions): no chat template.
    raw_prompt: bool = False

    def __post_init__(self):
        # The gateway's rules and limits (one checker); an engine never sees a bad value.
        try:
            validation.check_sampling(max_tokens=self.max_tokens, temperature=self.temperature,
                                      top_p=self.top_p, stop=self.stop, seed=self.seed)
        except validation.InvalidInput as exc:
            raise EngineError(str(exc), code=f"invalid_{exc.field.partition('[')[0]}") from None


def check_messages(messages) -> None:
    """For engines that render a chat: the protocol's rule for messages (the
    gateway checks with the same function), as an EngineError."""
    try:
        validation.check_messages(messages)
    except validation.InvalidInput as exc:
        raise EngineError(str(exc), code="invalid_messages") from None


@dataclasses.dataclass
class Sequence:
    """One generation request as the engine sees it.

    ``messages`` is the OpenAI-style chat (list of {"role", "content"});
    fixed-batch engines read ``messages[-1]["content"]`` as their one input.
    ``prompt_tokens`` is filled by ``Engine.prepare`` (the engine's own
    tokenizer), so usage counts are exact. An engine whose tokenizer is remote
    (upstream) sets ``meta["usage"]`` to the model server's
    {"prompt_tokens", "completion_tokens"}; the worker reports those instead.
    """

    id: str
    messages: list[dict[str, str]]
    params: SamplingParams = dataclasses.field(default_factory=SamplingParams)
    prompt_tokens: list[int] = dataclasses.field(default_factory=list)
    output_tokens: list[int] = dataclasses.field(default_factory=list)
    output_text: str = ""
    created_at: float = dataclasses.field(default_factory=time.monotonic)
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class StepResult:
    seq_id: str
    text: str = ""                       # text produced in this step (a delta)
    token_ids: list[int] = dataclasses.field(default_factory=list)
    finished: bool = False
    finish_reason: str | None = None     # "stop" | "length" when finished


@dataclasses.dataclass(frozen=True)
class Capacity:
    max_batch_size: int                  # sequences in one step
    max_batch_tokens: int                # prompt + generated tokens held at once
    context_window: int                  # longest sequence (prompt + output)
    fixed_batch: bool = False            # True: one call per batch, flush by size/wait


# What a request may ask of an engine beyond plain sampling (inference_protocol.features).
FEATURE_OF_PARAM = {"constraint": "response_format", "logprobs": "logprobs", "raw_prompt": "completions"}


class Engine(abc.ABC):
    """Subclasses implement ``capacity``, ``prepare``, ``step``; ``release`` and
    ``health`` have safe defaults."""

    model_name: str = ""
    # The optional features it implements (names as in inference_protocol.features).
    features: frozenset[str] = frozenset()

    def check_supported(self, params: SamplingParams) -> None:
        """Refuse a request for a feature this engine does not implement (never ignore it)."""
        for attr, feature in FEATURE_OF_PARAM.items():
            if getattr(params, attr) not in (None, False) and feature not in self.features:
                raise EngineError(f"{type(self).__name__} does not implement '{feature}'",
                                  code="unsupported_parameter")

    @classmethod
    def checkpoint_options(cls, directory: str, files: list[str]) -> dict:
        """Constructor options that load a fetched checkpoint (``files``, relative
        to ``directory``); engines that load no weights refuse one."""
        raise EngineLoadError(f"engine {cls.__name__} does not load model checkpoints")

    @property
    @abc.abstractmethod
    def capacity(self) -> Capacity: ...

    @abc.abstractmethod
    def prepare(self, seq: Sequence) -> None:
        """Validate and tokenize ``seq`` before it is queued (fails fast with
        EngineError: prompt longer than the context window, bad params)."""

    @abc.abstractmethod
    def step(self, running: list[Sequence], new: list[Sequence]) -> list[StepResult]:
        """Advance every sequence in ``running + new`` by one step.

        Must return exactly one result per sequence. May raise: the scheduler
        then splits the batch to isolate the failing sequence(s), so a step
        must leave sequences it did not finish in a state where they can be
        stepped again (or released)."""

    def release(self, seq_id: str) -> None:
        """Free per-sequence state (KV cache) of a finished or cancelled sequence."""
        return None

    def health(self) -> bool:
        return True
