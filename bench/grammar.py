"""Constrained decoding on SmolLM2 (llama.cpp): llguidance against llama.cpp's own
grammar sampler, on the same schemas and the same token sequences.

    .venv/bin/python bench/grammar.py [--seeds 8]

1. Generates JSON with the engine under llguidance (the path /v1 uses) for a few
   seeds per schema, and times the same batch unconstrained: the cost of the
   constraint as a share of a decode step.
2. Replays every generated token sequence through both constrainers, timing
   what each needs per token to produce the next mask (llguidance: the bitmask,
   unpacked and applied to a logits row; llama.cpp: ``llama_sampler_apply`` of a
   GBNF grammar from llama-cpp-python's JSON-schema converter on the full
   candidate array, then ``llama_sampler_accept``), and the compile time of each
   grammar. Checks that llama.cpp's grammar accepts every replayed token too.

Prints ratios against llguidance measured in the same run.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402

from inference_protocol import structured  # noqa: E402
from inference_worker.engines.base import SamplingParams, Sequence  # noqa: E402
from inference_worker.engines.constrained import TokenConstraint  # noqa: E402
from inference_worker.engines.llamacpp import LlamaCppEngine  # noqa: E402

SCHEMAS = {
    "person": {"type": "object", "additionalProperties": False,
               "required": ["name", "age", "colour", "tags"],
               "properties": {"name": {"type": "string", "maxLength": 12},
                              "age": {"type": "integer", "minimum": 0, "maximum": 150},
                              "colour": {"enum": ["red", "green", "blue"]},
                              "tags": {"type": "array", "items": {"type": "string", "maxLength": 8},
                                       "maxItems": 3}}},
    "order": {"type": "object", "additionalProperties": False, "required": ["id", "items", "paid"],
              "properties": {"id": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{4}$"},
                             "paid": {"type": "boolean"},
                             "items": {"type": "array", "maxItems": 2, "items": {
                                 "type": "object", "additionalProperties": False,
                                 "required": ["sku", "qty"],
                                 "properties": {"sku": {"type": "string", "maxLength": 6},
                                                "qty": {"type": "integer", "minimum": 1,
                                                        "maximum": 9}}}}}},
}
PROMPT = "Reply with a JSON object describing a {name}."


def run_batch(engine, seqs):
    """Step a batch to the end; returns (seconds, steps, {id: token ids})."""
    out = {s.id: [] for s in seqs}
    for s in seqs:
        engine.prepare(s)
    running, new, steps = [], list(seqs), 0
    t = time.perf_counter()
    while running or new:
        results = engine.step(running, new)
        still = []
        for s, r in zip(running + new, results, strict=True):
            out[s.id] += r.token_ids
            if r.finished:
                engine.release(s.id)
            else:
                still.append(s)
        running, new, steps = still, [], steps + 1
    return time.perf_counter() - t, steps, out


def generate(engine, name, constraint, seeds, max_tokens):
    seqs = [Sequence(id=f"{name}-{i}", messages=[{"role": "user", "content": PROMPT.format(name=name)}],
                     params=SamplingParams(max_tokens=max_tokens, temperature=1.0, seed=i,
                                           constraint=constraint)) for i in range(seeds)]
    return run_batch(engine, seqs)


class LlamaGrammar:
    """llama.cpp's grammar sampler over the full vocabulary (what llama.cpp's own
    server does for response_format)."""

    def __init__(self, ll, vocab, n_vocab, gbnf: str):
        self.ll = ll
        self.smpl = ll.llama_sampler_init_grammar(vocab, gbnf.encode(), b"root")
        if not self.smpl:
            raise RuntimeError("llama.cpp refused the grammar")
        self.n = n_vocab
        self.data = (ll.llama_token_data * n_vocab)()
        self.view = np.ctypeslib.as_array(ctypes.cast(self.data, ctypes.POINTER(ctypes.c_uint8)),
                                          shape=(n_vocab * ctypes.sizeof(ll.llama_token_data),))
        dtype = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])
        self.rows = self.view.view(dtype)
        self.ids = np.arange(n_vocab, dtype=np.int32)

    def mask(self, logits: np.ndarray) -> np.ndarray:
        self.rows["id"] = self.ids
        self.rows["logit"] = logits
        self.rows["p"] = 0
        arr = self.ll.llama_token_data_array(self.data, self.n, -1, False)
        self.ll.llama_sampler_apply(self.smpl, ctypes.byref(arr))
        return np.isfinite(self.rows["logit"])

    def accept(self, token: int) -> None:
        self.ll.llama_sampler_accept(self.smpl, token)

    def close(self):
        self.ll.llama_sampler_free(self.smpl)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64)
    args = ap.parse_args()
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    engine = LlamaCppEngine(n_seq_max=args.seeds, context_window=512, n_threads=1)
    model = engine._model
    t = time.perf_counter()
    tokenizer = engine.grammar_tokenizer()
    print(f"llguidance tokenizer of SmolLM2's {model.n_vocab} tokens: "
          f"{time.perf_counter() - t:.2f} s (once per model)")
    print(f"{'schema':8} {'what':44} {'llguidance':>12} {'llama.cpp':>12} {'ratio':>8}")
    for name, schema in SCHEMAS.items():
        constraint = {"type": "json_schema", "name": name, "schema": schema}
        structured.check_compiles(constraint, field="schema")
        t_free, steps_free, _ = generate(engine, name, None, args.seeds, args.max_tokens)
        t_con, steps_con, outs = generate(engine, name, constraint, args.seeds, args.max_tokens)
        # Compile times (median of 5).
        llg, gb = [], []
        gbnf = json_schema_to_gbnf(json.dumps(schema))
        for _ in range(5):
            t = time.perf_counter()
            TokenConstraint(tokenizer, constraint, model.n_vocab)
            llg.append(time.perf_counter() - t)
            t = time.perf_counter()
            gbnf = json_schema_to_gbnf(json.dumps(schema))
            LlamaGrammar(model.ll, model.vocab, model.n_vocab, gbnf).close()
            gb.append(time.perf_counter() - t)
        print(f"{name:8} {'compile a request grammar (ms)':44} {1000 * statistics.median(llg):12.2f} "
              f"{1000 * statistics.median(gb):12.2f} {statistics.median(gb) / statistics.median(llg):7.1f}x")
        # Replay: per-token mask cost.
        logits = np.zeros(model.n_vocab, dtype=np.float32)
        t_llg = t_gb = 0.0
        n_tok = refused = 0
        for tokens in outs.values():
            a = TokenConstraint(tokenizer, constraint, model.n_vocab)
            b = LlamaGrammar(model.ll, model.vocab, model.n_vocab, gbnf)
            for tok in tokens:
                t = time.perf_counter()
                a.apply(logits)
                a.consume(tok)
                t_llg += time.perf_counter() - t
                t = time.perf_counter()
                allowed = b.mask(logits)
                if allowed[tok]:
                    b.accept(tok)
                t_gb += time.perf_counter() - t
                if not allowed[tok]:
                    refused += 1
                    break
                n_tok += 1
            b.close()
        print(f"{name:8} {'mask per token (ms)':44} {1000 * t_llg / n_tok:12.3f} {1000 * t_gb / n_tok:12.3f} "
              f"{t_gb / t_llg:7.1f}x")
        step_ms = 1000 * t_free / steps_free
        print(f"{name:8} {f'decode step of {args.seeds} sequences (ms), unconstrained':44} {step_ms:12.2f}")
        print(f"{name:8} {'constrained step (ms), ours: mask per sequence':44} "
              f"{1000 * t_con / steps_con:12.2f} "
              f"{step_ms + args.seeds * 1000 * t_gb / n_tok:12.2f}  (llama.cpp column: estimate)")
        print(f"{name:8} tokens replayed: {n_tok}; refused by llama.cpp's grammar: {refused} sequence(s)")
    engine.close()


if __name__ == "__main__":
    main()
