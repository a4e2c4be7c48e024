"""Engine benchmarks (issue 6, "Performance"). One run, about 2 minutes on 2 cores.

    .venv/bin/python bench/engines.py [--tokens 64] [--only llamacpp|transformers]
                                      [--threads 2] [--kv-unified] [--json]

- SmolLM2 on llama.cpp: generated tokens/s with 1, 4, 8, 16 concurrent
  requests (all joining at once, driven step by step as the scheduler does)
  and the ratio to one request; time to first token (mean, max); peak RSS of
  this process holding the model with 16 sequences (measured before torch is
  ever imported, so it is what a llama.cpp worker needs).
- TransformersEngine on a tiny random Llama built in a temp dir: tokens/s at
  batch 1, 8, 32 against running the same requests one after another, and a
  check that batched outputs equal the sequential ones token for token.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from inference_worker.engines.base import SamplingParams, Sequence  # noqa: E402

TOPICS = ["the sea", "a lighthouse keeper", "a robot learning to paint", "a mountain village",
          "the first day of school", "a lost dog finding home", "a city at night", "bees",
          "a chess tournament", "a storm at sea", "an old library", "a train journey",
          "a garden in winter", "a space station", "a baker at dawn", "a desert caravan",
          "the moon", "a river", "a clockmaker", "a volcano", "a fox", "a violin",
          "a snowstorm", "a market", "a bridge", "a kite", "a comet", "an island",
          "a forest fire", "a submarine", "a glacier", "a lantern"]


def requests(n, tokens, *, prefix="r"):
    return [Sequence(id=f"{prefix}{i}",
                     messages=[{"role": "user",
                                "content": f"Write a long, detailed story about {TOPICS[i]}."}],
                     params=SamplingParams(max_tokens=tokens, temperature=0.0))
            for i in range(n)]


def drive(engine, seqs):
    """All ``seqs`` join at step 0; returns (outputs, wall s, first-token times)."""
    for s in seqs:
        engine.prepare(s)
    out = {s.id: [] for s in seqs}
    ttft: dict[str, float] = {}
    t0 = time.perf_counter()
    running, new = [], list(seqs)
    while running or new:
        results = engine.step(running, new)
        now = time.perf_counter() - t0
        still = []
        for s, r in zip(running + new, results, strict=True):
            out[s.id] += r.token_ids
            ttft.setdefault(s.id, now)
            if r.finished:
                engine.release(s.id)
            else:
                still.append(s)
        running, new = still, []
    return out, time.perf_counter() - t0, ttft


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_llamacpp(tokens, kv_unified=False, threads=2):
    from inference_worker.engines.llamacpp import LlamaCppEngine

    rss_before = peak_rss_mb()
    t = time.perf_counter()
    # Unified: one 8192-cell buffer shared by all 16; else 16 streams of 2048.
    engine = LlamaCppEngine(n_seq_max=16, context_window=2048, n_threads=threads, kv_unified=kv_unified,
                            n_ctx=8192 if kv_unified else None)
    load_s = time.perf_counter() - t
    drive(engine, requests(1, 4, prefix="warm"))  # first decode allocates buffers
    rows, base = [], None
    for n in (1, 4, 8, 16):
        out, wall, ttft = drive(engine, requests(n, tokens))
        generated = sum(len(v) for v in out.values())
        tps = generated / wall
        base = base or tps
        rows.append({"concurrent": n, "tokens": generated, "wall_s": round(wall, 2),
                     "tokens_per_s": round(tps, 1), "ratio_vs_one": round(tps / base, 2),
                     "ttft_mean_ms": round(1000 * sum(ttft.values()) / n),
                     "ttft_max_ms": round(1000 * max(ttft.values()))})
    result = {"load_s": round(load_s, 2), "kv_unified": kv_unified, "threads": threads, "rows": rows,
              "peak_rss_mb_16_sequences": round(peak_rss_mb()),
              "rss_before_load_mb": round(rss_before)}
    engine.close()
    return result


def build_tiny_model(path):
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = sorted({w.strip(".,").lower() for t in TOPICS for w in t.split()}
                   | set("write a long detailed story about user assistant :".split()))
    vocab = {t: i for i, t in enumerate(["<pad>", "<s>", "</s>", "<unk>", *words])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>",
                                   eos_token="</s>", unk_token="<unk>")
    fast.chat_template = ("{% for m in messages %}<s> {{ m['role'] }} : {{ m['content'] }} "
                          "</s> {% endfor %}<s> assistant :")
    fast.save_pretrained(path)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=128, intermediate_size=256,
                      num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=512, initializer_range=0.3,
                      pad_token_id=0, bos_token_id=1, eos_token_id=2)
    LlamaForCausalLM(cfg).save_pretrained(path)


def bench_transformers(tokens):
    import torch

    from inference_worker.engines.transformers_engine import TransformersEngine

    torch.set_num_threads(2)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        build_tiny_model(d)
        engine = TransformersEngine(model_dir=d, max_batch_size=32)
        # Warm up every code path (prefill, decode, merge, row drop) first.
        drive(engine, requests(8, 8, prefix="warm"))
        for n in (1, 8, 32):
            seq_out, seq_wall = {}, 0.0
            for s in requests(n, tokens):
                out, wall, _ = drive(engine, [s])
                seq_out.update(out)
                seq_wall += wall
            out, wall, _ = drive(engine, requests(n, tokens))
            generated = sum(len(v) for v in out.values())
            rows.append({"batch": n, "tokens": generated,
                         "sequential_tokens_per_s": round(generated / seq_wall, 1),
                         "batched_tokens_per_s": round(generated / wall, 1),
                         "ratio": round(seq_wall / wall, 2),
                         "outputs_identical": out == seq_out})
    return {"device": str(engine.device), "rows": rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=64, help="max_tokens per request")
    ap.add_argument("--only", choices=["llamacpp", "transformers"])
    ap.add_argument("--kv-unified", action="store_true",
                    help="llama.cpp with one shared KV buffer (less memory, not solo-exact)")
    ap.add_argument("--threads", type=int, default=2,
                    help="llama.cpp threads (1 is faster on a CPU shared with other work)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    # Other processes on a 2-core machine distort every number: record the load.
    report = {"cpus": os.cpu_count(), "loadavg_1m_at_start": round(os.getloadavg()[0], 2)}
    # llama.cpp first: its peak RSS must not include torch.
    if args.only in (None, "llamacpp"):
        report["llamacpp"] = bench_llamacpp(args.tokens, args.kv_unified, args.threads)
    if args.only in (None, "transformers"):
        report["transformers"] = bench_transformers(args.tokens // 2)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{report['cpus']} CPUs, load average {report['loadavg_1m_at_start']} at start")
    if "llamacpp" in report:
        r = report["llamacpp"]
        print(f"SmolLM2-135M Q4_1 on llama.cpp ({r['threads']} threads, kv_unified={r['kv_unified']}), "
              f"load {r['load_s']} s")
        print(f"{'conc':>5} {'tokens':>7} {'wall s':>7} {'tok/s':>7} {'x one':>6} "
              f"{'TTFT mean ms':>13} {'TTFT max ms':>12}")
        for x in r["rows"]:
            print(f"{x['concurrent']:>5} {x['tokens']:>7} {x['wall_s']:>7} "
                  f"{x['tokens_per_s']:>7} {x['ratio_vs_one']:>6} {x['ttft_mean_ms']:>13} "
                  f"{x['ttft_max_ms']:>12}")
        print(f"peak RSS with 16 sequences: {r['peak_rss_mb_16_sequences']} MB "
              f"(before load {r['rss_before_load_mb']} MB)")
    if "transformers" in report:
        r = report["transformers"]
        print(f"\nTransformersEngine, tiny random Llama on {r['device']}")
        print(f"{'batch':>5} {'tokens':>7} {'seq tok/s':>10} {'batch tok/s':>12} "
              f"{'ratio':>6} identical")
        for x in r["rows"]:
            print(f"{x['batch']:>5} {x['tokens']:>7} {x['sequential_tokens_per_s']:>10} "
                  f"{x['batched_tokens_per_s']:>12} {x['ratio']:>6} {x['outputs_identical']}")


if __name__ == "__main__":
    main()
