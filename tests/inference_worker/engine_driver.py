"""Drive an engine step by step the way the scheduler does, for engine tests."""

from inference_worker.engines.base import SamplingParams, Sequence


def make_seq(seq_id: str, prompt: str, **params) -> Sequence:
    """A greedy request (temperature 0 unless given) for one user message."""
    params.setdefault("temperature", 0.0)
    return Sequence(id=seq_id, messages=[{"role": "user", "content": prompt}],
                    params=SamplingParams(**params))


def run(engine, arrivals):
    """``arrivals`` maps step -> sequences joining at that step; returns
    seq id -> (token ids, text, finish reason). Finished sequences are released."""
    out, running, step = {}, [], 0
    pending = {k: list(v) for k, v in arrivals.items()}
    while running or pending:
        new = pending.pop(step, [])
        for s in new:
            engine.prepare(s)
            out[s.id] = ([], "", None)
        results = engine.step(running, new)
        assert [r.seq_id for r in results] == [s.id for s in running + new]
        still = []
        for s, r in zip(running + new, results, strict=True):
            toks, text, _ = out[s.id]
            out[s.id] = (toks + r.token_ids, text + r.text, r.finish_reason)
            if r.finished:
                engine.release(s.id)
            else:
                still.append(s)
        running = still
        step += 1
    assert engine.active == 0
    return out
