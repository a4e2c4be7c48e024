"""TransformersEngine: any causal LM from a local directory, on PyTorch.

Continuous batching over one batch-wide KV cache:

- The cache holds one row per running sequence, every row the same length;
  shorter rows are padded on the LEFT with masked columns (attention_mask 0),
  and each row keeps its own position counter, so RoPE positions and attention
  are exactly those of the sequence run alone.
- Joining sequences are prefilled together (left-padded, one forward), then
  their cache is merged into the running one by left-padding whichever side is
  shorter. A finished sequence's row is dropped and all-padding columns on the
  left trimmed.
- A step decodes every row in one forward. Rows the scheduler did not ask to
  advance (it may step a subset after a failure) take a masked dummy token, so
  their state does not change.

Numerically a padded batch is not bit-identical to a solo run (different
matmul shapes reduce in a different order); greedy tokens match unless two
logits are within float noise of each other. Pass ``dtype="float64"`` where
exactness matters more than speed (the tests do, on a tiny model).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from core.extras import MissingExtra, require_extra

from .base import Capacity, Engine, EngineError, EngineLoadError, Sequence, StepResult, check_messages
from .sampling import Sampler, TextStream, check_prompt_fits

_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                 "pytorch_model.bin.index.json")


@dataclasses.dataclass
class _SeqState:
    sampler: Sampler
    stream: TextStream
    max_tokens: int
    prompt_len: int
    tokens: list[int]              # prompt + generated, for incremental decoding
    pos: int = 0                   # next RoPE position (= real tokens in cache)
    pending: int | None = None     # sampled, not yet fed
    generated: int = 0
    prefix_offset: int = 0         # incremental detokenizer window
    read_offset: int = 0
    finished: bool = False


class TransformersEngine(Engine):
    """Options: model_dir (required), device ("cuda" if available else "cpu"),
    dtype ("auto": bfloat16 on CUDA, float32 on CPU; or a torch dtype name),
    max_batch_size, max_batch_tokens, context_window (default: the model's),
    attn_implementation (passed to from_pretrained; default the library's)."""

    @classmethod
    def checkpoint_options(cls, directory, files):
        return {"model_dir": directory}

    def __init__(
        self,
        *,
        model_dir: str,
        model_name: str | None = None,
        device: str | None = None,
        dtype: str = "auto",
        max_batch_size: int = 32,
        max_batch_tokens: int = 65536,
        context_window: int | None = None,
        attn_implementation: str | None = None,
    ):
        try:
            require_extra("torch", "transformers", feature="The transformers engine", extra="ml")
        except MissingExtra as exc:
            raise EngineLoadError(str(exc)) from None
        import torch

        self._torch = torch
        self.model_dir = model_dir
        self.model_name = model_name or os.path.basename(os.path.normpath(model_dir))
        if not os.path.isdir(model_dir):
            raise EngineLoadError(f"model directory not found: {model_dir}")
        if not any(os.path.exists(os.path.join(model_dir, f)) for f in _WEIGHT_FILES):
            raise EngineLoadError(
                f"{model_dir} holds no model weights (expected one of {', '.join(_WEIGHT_FILES)})"
            )
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        if dtype == "auto":
            torch_dtype: torch.dtype | None = torch.bfloat16 if self.device.type == "cuda" else torch.float32
        else:
            torch_dtype = getattr(torch, dtype, None)
            if not isinstance(torch_dtype, torch.dtype):
                raise EngineLoadError(f"unknown dtype {dtype!r}")
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
            kwargs: dict[str, Any] = {"dtype": torch_dtype, "local_files_only": True}
            if attn_implementation:
                kwargs["attn_implementation"] = attn_implementation
            model = AutoModelForCausalLM.from_pretrained(model_dir, **kwargs)
        except Exception as exc:
            raise EngineLoadError(f"could not load a causal LM from {model_dir}: {exc}") from exc
        self.model = model.to(self.device).eval()  # type: ignore[arg-type]  # stub: to() takes a device
        self.vocab_size = self.model.get_input_embeddings().num_embeddings
        # transformers 5 renamed past_key_values to cache (the old name warns).
        params = inspect.signature(self.model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self._last_only = {"logits_to_keep": 1} if "logits_to_keep" in params else {}

        cfg = model.config.get_text_config(decoder=True)
        limit = getattr(cfg, "max_position_embeddings", None) or 2048
        self.context_window = min(context_window or limit, limit)
        self.max_batch_size = max_batch_size
        self.max_batch_tokens = max_batch_tokens
        eos = {self.tokenizer.eos_token_id}
        gen_eos = getattr(model.generation_config, "eos_token_id", None)
        eos |= set(gen_eos) if isinstance(gen_eos, list) else {gen_eos}
        self.eos_ids = {e for e in eos if e is not None}
        pad = self.tokenizer.pad_token_id
        # Pads are always masked out; any valid id will do as their input.
        self.pad_id = pad if pad is not None else (min(self.eos_ids) if self.eos_ids else 0)

        self._lock = threading.Lock()
        self._states: dict[str, _SeqState] = {}
        self._rows: list[str] = []      # seq id of each cache row
        self._kv: list[tuple] = []      # per layer (keys, values): [rows, heads, cols, dim]
        self._mask = torch.zeros((0, 0), dtype=torch.long, device=self.device)

    # -- tokenizer ---------------------------------------------------------

    def render_prompt(self, messages: list[dict[str, str]]) -> list[int]:
        check_messages(messages)
        if self.tokenizer.chat_template:
            try:
                ids: Any = self.tokenizer.apply_chat_template(
                    messages, add_generation_prompt=True, tokenize=True, return_dict=False
                )
            except Exception as exc:
                raise EngineError(f"chat template failed: {exc}", code="invalid_messages") from exc
            # Some tokenizers answer a BatchEncoding (a Mapping, not a dict) anyway.
            return list(ids["input_ids"] if hasattr(ids, "keys") else ids)
        # Base models have no chat template: a plain transcript, the common
        # convention for completion models.
        text = "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:"
        return self.tokenizer(text)["input_ids"]

    # -- Engine interface --------------------------------------------------

    @property
    def capacity(self) -> Capacity:
        return Capacity(max_batch_size=self.max_batch_size, max_batch_tokens=self.max_batch_tokens,
                        context_window=self.context_window)

    def prepare(self, seq: Sequence) -> None:
        tokens = self.render_prompt(seq.messages)
        check_prompt_fits(tokens, self.context_window)
        seq.prompt_tokens = list(tokens)

    def step(self, running: list[Sequence], new: list[Sequence]) -> list[StepResult]:
        with self._lock, self._torch.inference_mode():
            return self._step(running + new)

    def _step(self, seqs: list[Sequence]) -> list[StepResult]:
        if len({s.id for s in seqs}) != len(seqs):
            raise EngineError("a sequence appears twice in one step", code="duplicate_sequence")
        joining, advancing = [], []
        for seq in seqs:
            st = self._states.get(seq.id)
            if st is None:
                if not seq.prompt_tokens:
                    self.prepare(seq)
                elif len(seq.prompt_tokens) >= self.context_window:
                    raise EngineError("prompt does not fit the context window",
                                      code="context_length_exceeded")
                # Checked here: on CUDA an out-of-range id is a device-side
                # assert that poisons the whole context, not an exception.
                elif not all(0 <= t < self.vocab_size for t in seq.prompt_tokens):
                    raise EngineError("prompt token id out of range", code="invalid_prompt_tokens")
                joining.append(seq)
            elif st.finished:
                raise EngineError(f"sequence {seq.id} already finished", code="finished")
            else:
                advancing.append(seq)
        if len(self._rows) + len(joining) > self.max_batch_size:
            raise EngineError(
                f"more than {self.max_batch_size} sequences at once", code="batch_full"
            )
        # Compute both forwards before changing any state, so a failure leaves
        # every sequence steppable again.
        decoded = self._decode_rows({s.id for s in advancing}) if advancing else None
        prefilled = self._prefill(joining) if joining else None

        logits: dict[str, np.ndarray] = {}
        if decoded is not None:
            self._kv, self._mask, rows_logits = decoded
            for sid, row in rows_logits.items():
                logits[sid] = row
                self._states[sid].pos += 1
        if prefilled is not None:
            kv, mask, new_logits = prefilled
            self._merge(kv, mask)
            for seq in joining:
                n = len(seq.prompt_tokens)
                self._states[seq.id] = _SeqState(
                    sampler=Sampler(seq.params),
                    stream=TextStream(seq.params.stop),
                    max_tokens=seq.params.max_tokens,
                    prompt_len=n,
                    tokens=list(seq.prompt_tokens),
                    pos=n,
                    prefix_offset=max(0, n - 5),
                    read_offset=n,
                )
                self._rows.append(seq.id)
                logits[seq.id] = new_logits[seq.id]
        results = [self._advance(seq.id, logits[seq.id]) for seq in seqs]
        for r in results:
            if r.finished:
                self._drop(r.seq_id)
        return results

    def _decode_rows(self, advance: set[str]):
        torch = self._torch
        rows = self._rows
        step_on = torch.tensor([sid in advance for sid in rows], dtype=torch.long,
                               device=self.device)
        ids = torch.tensor(
            [[self._states[s].pending if s in advance else self.pad_id] for s in rows],
            device=self.device,
        )
        pos = torch.tensor([[self._states[s].pos] for s in rows], device=self.device)
        mask = torch.cat([self._mask, step_on[:, None]], dim=1)
        last, kv = self._forward(ids, mask, pos, self._kv)
        return kv, mask, {sid: last[i] for i, sid in enumerate(rows) if sid in advance}

    def _prefill(self, seqs: list[Sequence]):
        torch = self._torch
        width = max(len(s.prompt_tokens) for s in seqs)
        ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, s in enumerate(seqs):
            n = len(s.prompt_tokens)
            ids[i, width - n:] = torch.tensor(s.prompt_tokens)
            mask[i, width - n:] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        last, kv = self._forward(ids, mask, pos, None)
        return kv, mask, {s.id: last[i] for i, s in enumerate(seqs)}

    def _forward(self, ids, mask, pos, kv):
        from transformers import DynamicCache

        cache = DynamicCache(ddp_cache_data=kv) if kv else DynamicCache()
        try:
            out = self.model(
                input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True,
                **{self._cache_kw: cache}, **self._last_only,
            )
        except Exception as exc:
            raise EngineError(f"forward pass failed: {exc}", code="forward_failed") from exc
        cache = getattr(out, "cache", None) or out.past_key_values
        kv = [(layer.keys, layer.values) for layer in cache.layers]
        return out.logits[:, -1, :].float().cpu().numpy(), kv

    def _merge(self, kv, mask) -> None:
        """Append prefilled rows to the running cache, left-padding the shorter side."""
        torch = self._torch
        if not self._rows:
            self._kv, self._mask = kv, mask
            return
        old, new = self._mask.shape[1], mask.shape[1]
        width = max(old, new)

        def pad(t, n):  # left-pad dim -2 (the sequence axis) with n zero columns
            if n == 0:
                return t
            shape = list(t.shape)
            shape[-2] = n
            return torch.cat([t.new_zeros(shape), t], dim=-2)

        self._kv = [
            (torch.cat([pad(ko, width - old), pad(kn, width - new)]),
             torch.cat([pad(vo, width - old), pad(vn, width - new)]))
            for (ko, vo), (kn, vn) in zip(self._kv, kv, strict=True)
        ]
        self._mask = torch.cat([
            torch.nn.functional.pad(self._mask, (width - old, 0)),
            torch.nn.functional.pad(mask, (width - new, 0)),
        ])

    def _drop(self, seq_id: str) -> None:
        """Remove a sequence's cache row and trim columns nobody attends to."""
        if seq_id not in self._rows:
            return
        torch = self._torch
        keep = [i for i, sid in enumerate(self._rows) if sid != seq_id]
        self._rows = [self._rows[i] for i in keep]
        if not keep:
            self._kv, self._mask = [], self._mask[:0, :0]
            return
        idx = torch.tensor(keep, device=self.device)
        mask = self._mask.index_select(0, idx)
        used = mask.any(dim=0).nonzero()
        start = int(used[0]) if used.numel() else mask.shape[1]
        self._mask = mask[:, start:]
        self._kv = [
            (k.index_select(0, idx)[:, :, start:], v.index_select(0, idx)[:, :, start:])
            for k, v in self._kv
        ]

    def _advance(self, seq_id: str, logits: np.ndarray) -> StepResult:
        st = self._states[seq_id]
        tok = st.sampler(logits)
        st.generated += 1
        res = StepResult(seq_id=seq_id, token_ids=[tok])
        if tok in self.eos_ids:
            res.token_ids = []  # not part of the completion (see LlamaCppEngine)
            res.text, res.finish_reason = st.stream.finish(), "stop"
        else:
            st.tokens.append(tok)
            res.text = st.stream.push_text(self._new_text(st))
            if st.stream.stopped:
                res.finish_reason = "stop"
            elif st.generated >= st.max_tokens or st.pos + 1 >= self.context_window:
                res.text += st.stream.push_text(self._new_text(st, final=True))
                res.text += st.stream.finish()
                res.finish_reason = "length"
        if res.finish_reason:
            res.finished = st.finished = True
        else:
            st.pending = tok
        return res

    def _new_text(self, st: _SeqState, *, final: bool = False) -> str:
        # Decode a short window and emit only what is stable: a token may be
        # half a character (byte-level BPE) or change the spacing of the one
        # before it. The same scheme as TGI/vLLM's incremental detokenizer.
        dec: Callable[..., str] = self.tokenizer.decode  # type: ignore[assignment]  # one sequence: a str
        prefix = dec(st.tokens[st.prefix_offset:st.read_offset], skip_special_tokens=True)
        text = dec(st.tokens[st.prefix_offset:], skip_special_tokens=True)
        if len(text) > len(prefix) and (final or not text.endswith("\ufffd")):
            st.prefix_offset, st.read_offset = st.read_offset, len(st.tokens)
            return text[len(prefix):]
        return ""

    def release(self, seq_id: str) -> None:
        with self._lock:
            self._states.pop(seq_id, None)
            self._drop(seq_id)

    @property
    def active(self) -> int:
        return len(self._rows)
