"""TransformersEngine on a tiny random-weight Llama built on disk by the test.

The property that matters for continuous batching: a request's greedy tokens
do not depend on what else is in the batch, or on when it joined.
"""

from __future__ import annotations

import pytest

# Imported, not importorskip'd: the test environment installs the 'ml' group, and a
# broken torch or transformers install must fail the suite, not skip it.
import torch
import transformers  # noqa: F401

from inference_worker.engines import build_engine
from inference_worker.engines.base import (
    EngineError,
    EngineLoadError,
    SamplingParams,
    Sequence,
)
from inference_worker.engines.transformers_engine import TransformersEngine
from tests.inference_worker.engine_driver import make_seq, run

# Touches no part the two profiles differ in: runs once, in the services pass.
pytestmark = pytest.mark.any_profile

WORDS = [f"w{i}" for i in range(120)] + ["user", "assistant", "system", ":", "hello", "world"]
TEMPLATE = (
    "{% for m in messages %}<s> {{ m['role'] }} : {{ m['content'] }} </s> {% endfor %}"
    "{% if add_generation_prompt %}<s> assistant : {% endif %}"
)


def build_tiny_model(path, *, seed=0):
    """A 2-layer Llama with a word-level tokenizer, all made offline."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<pad>", "<s>", "</s>", "<unk>"]
    vocab = {t: i for i, t in enumerate(specials + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
        unk_token="<unk>",
    )
    fast.chat_template = TEMPLATE
    fast.save_pretrained(path)
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(vocab), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        # Wide weights spread the logits, so greedy choices are not float-noise ties.
        initializer_range=0.3, pad_token_id=0, bos_token_id=1, eos_token_id=2,
    )
    LlamaForCausalLM(cfg).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return str(build_tiny_model(tmp_path_factory.mktemp("tiny-llama")))


@pytest.fixture(scope="module")
def engine(model_dir):
    return TransformersEngine(model_dir=model_dir, device="cpu")


PROMPTS = [
    "hello world",
    "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12",
    "w40",
    "w7 w7 w7 hello",
    "w99 w98 w97 w96 w95 w94 w93 w92 w91 w90 w89 w88 w87 w86 w85 w84 w83 w82",
    "world w3",
]


def seq(i, prompt, **params):
    params.setdefault("max_tokens", 12)
    return make_seq(f"s{i}", prompt, **params)


def test_batched_greedy_equals_solo_including_mid_batch_joins(engine):
    solo = {}
    for i, p in enumerate(PROMPTS):
        solo.update(run(engine, {0: [seq(i, p)]}))
    assert len({tuple(v[0]) for v in solo.values()}) > 1, "degenerate model: outputs all equal"

    # All at once.
    together = run(engine, {0: [seq(i, p) for i, p in enumerate(PROMPTS)]})
    assert together == solo
    # Staggered: sequences join a batch already decoding, at different steps,
    # with prompts both longer and shorter than the cache's current width.
    staggered = run(engine, {
        0: [seq(1, PROMPTS[1])],
        2: [seq(0, PROMPTS[0]), seq(2, PROMPTS[2])],
        5: [seq(4, PROMPTS[4])],
        6: [seq(3, PROMPTS[3])],
        9: [seq(5, PROMPTS[5])],
    })
    assert staggered == solo


def test_finished_rows_leave_and_others_continue(engine):
    short = seq(0, PROMPTS[0], max_tokens=2)
    long = seq(1, PROMPTS[1], max_tokens=12)
    both = run(engine, {0: [short, long]})
    alone = run(engine, {0: [seq(1, PROMPTS[1], max_tokens=12)]})
    assert both["s0"][2] == "length" and len(both["s0"][0]) == 2
    assert both["s1"] == alone["s1"]


def test_subset_step_leaves_other_rows_untouched(engine):
    """After a failed step the scheduler may step only some sequences; the
    others must continue exactly as if nothing happened in between."""
    def pair():
        return [seq(i, PROMPTS[i], max_tokens=10, temperature=1.0, seed=7 + i) for i in (2, 3)]

    expected = {k: v[0] for k, v in run(engine, {0: pair()}).items()}
    a, b = pair()
    for s in (a, b):
        engine.prepare(s)
    toks = {"s2": [], "s3": []}
    for r in engine.step([], [a, b]):
        toks[r.seq_id] += r.token_ids
    # b runs to the end alone while a's row gets masked dummy columns; then a.
    for s in (b, a):
        while True:
            (r,) = engine.step([s], [])
            toks[s.id] += r.token_ids
            if r.finished:
                engine.release(s.id)
                break
    assert toks == expected


def test_failed_step_changes_nothing(engine, monkeypatch):
    """A step that raises leaves the running sequences as they were, so the
    scheduler can split the batch and step them again."""
    expected = run(engine, {0: [seq(1, PROMPTS[1])]})["s1"]
    good = seq(1, PROMPTS[1])
    engine.prepare(good)
    (first,) = engine.step([], [good])
    bad = Sequence(id="bad", messages=[{"role": "user", "content": "x"}],
                   prompt_tokens=[1, 10**6])
    with pytest.raises(EngineError) as e:
        engine.step([good], [bad])
    assert e.value.code == "invalid_prompt_tokens"
    # A failure after the running rows' forward already ran (as an OOM in the
    # joining sequences' prefill would be) must not commit that forward either.
    late = seq(9, PROMPTS[0])
    engine.prepare(late)
    with monkeypatch.context() as m:
        m.setattr(engine, "_prefill", lambda seqs: (_ for _ in ()).throw(
            EngineError("out of memory", code="forward_failed")))
        with pytest.raises(EngineError):
            engine.step([good], [late])
    toks, text = list(first.token_ids), first.text
    while True:
        (r,) = engine.step([good], [])
        toks += r.token_ids
        text += r.text
        if r.finished:
            engine.release(good.id)
            break
    assert (toks, text, r.finish_reason) == expected
    assert engine.active == 0


def test_seeded_sampling_is_batch_independent(engine):
    def req(i, p):
        return seq(i, p, temperature=0.9, top_p=0.9, seed=1234 + i, max_tokens=10)

    solo = {}
    for i, p in enumerate(PROMPTS[:4]):
        solo.update(run(engine, {0: [req(i, p)]}))
    batched = run(engine, {0: [req(0, PROMPTS[0]), req(1, PROMPTS[1])],
                           3: [req(2, PROMPTS[2]), req(3, PROMPTS[3])]})
    assert batched == solo


def test_stop_sequence_and_prompt_tokens(engine):
    base = run(engine, {0: [seq(0, PROMPTS[1], max_tokens=10)]})["s0"]
    words = base[1].split()
    assert len(words) >= 3
    target = words[2]
    stopped = run(engine, {0: [seq(0, PROMPTS[1], max_tokens=10, stop=(target,))]})["s0"]
    assert stopped[2] == "stop"
    assert target not in stopped[1]
    assert base[1].startswith(stopped[1])

    s = seq(0, "hello world")
    engine.prepare(s)
    expected = engine.tokenizer(
        "<s> user : hello world </s> <s> assistant : ")["input_ids"]
    assert s.prompt_tokens == list(expected)


def test_registry_builds_transformers_engine(model_dir):
    eng = build_engine("tiny", {"engine": "transformers", "model_dir": model_dir,
                                "device": "cpu", "max_batch_size": 4})
    assert eng.model_name == "tiny"
    assert eng.capacity.max_batch_size == 4
    s = seq(0, "hello")
    eng.prepare(s)
    assert len(eng.step([], [s])) == 1


def test_missing_dir_and_missing_weights_fail_at_load(tmp_path):
    with pytest.raises(EngineLoadError, match="not found"):
        TransformersEngine(model_dir=str(tmp_path / "nope"))
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(EngineLoadError, match="no model weights"):
        TransformersEngine(model_dir=str(tmp_path))


def test_bad_requests_fail_clearly(engine):
    with pytest.raises(EngineError) as e:
        SamplingParams(temperature=-0.1)
    assert e.value.code == "invalid_temperature"
    with pytest.raises(EngineError) as e:
        SamplingParams(stop=("",))
    assert e.value.code == "invalid_stop"
    too_long = seq(0, " ".join(["w1"] * 600))
    with pytest.raises(EngineError) as e:
        engine.prepare(too_long)
    assert e.value.code == "context_length_exceeded"
    with pytest.raises(EngineError) as e:
        engine.prepare(Sequence(id="x", messages=[{"role": "user"}]))
    assert e.value.code == "invalid_messages"
