"""Detokenizing and stop-sequence handling shared by the token engines."""

from __future__ import annotations

import numpy as np
import pytest

from inference_worker.engines.base import EngineError, SamplingParams
from inference_worker.engines.sampling import Sampler, TextStream, check_params


def stream_all(pieces, stop):
    ts = TextStream(stop)
    deltas = [ts.push(p) for p in pieces]
    if not ts.stopped:
        deltas.append(ts.finish())
    return deltas, ts


def test_partial_stop_match_is_held_back_then_released():
    deltas, ts = stream_all([b"Hello ", b"EN", b"x", b" world"], ("END",))
    # "EN" could start "END": it is shown only once "x" rules that out.
    assert deltas == ["Hello ", "", "ENx", " world", ""]
    assert not ts.stopped


def test_stop_split_across_tokens_is_never_streamed():
    deltas, ts = stream_all([b"The answer", b" is 4", b"2.\n\n", b"##", b"# Next"], ("\n\n###",))
    assert ts.stopped
    assert "".join(deltas) == "The answer is 42."
    assert all("#" not in d for d in deltas)


def test_earliest_stop_wins_and_text_after_is_dropped():
    deltas, ts = stream_all([b"a STOP b END c"], ("END", "STOP"))
    assert "".join(deltas) == "a " and ts.stopped
    assert ts.push(b"more") == "" and ts.finish() == ""


def test_multibyte_characters_split_across_tokens():
    data = "héllo 🙂".encode()
    pieces = [data[i:i + 1] for i in range(len(data))]
    deltas, _ = stream_all(pieces, ())
    assert "".join(deltas) == "héllo 🙂"
    assert all("\ufffd" not in d for d in deltas)


def test_invalid_bytes_become_replacement_characters_at_the_end():
    deltas, _ = stream_all([b"ok", b"\xf0\x9f"], ())
    assert "".join(deltas) == "ok\ufffd"


def test_sampler_greedy_seeded_and_top_p():
    logits = np.array([0.0, 3.0, 2.9, -1.0], dtype=np.float32)
    assert Sampler(SamplingParams(temperature=0))(logits) == 1
    draws = [Sampler(SamplingParams(temperature=1.0, seed=5))(logits) for _ in range(3)]
    assert len(set(draws)) == 1  # the same seed draws the same
    s = Sampler(SamplingParams(temperature=1.0, top_p=0.5, seed=1))
    assert {s(logits) for _ in range(200)} == {1}  # token 1 alone holds > 50%
    s = Sampler(SamplingParams(temperature=1.0, top_p=0.9, seed=1))
    assert {s(logits) for _ in range(200)} == {1, 2}


def test_check_params_rejects_values_smuggled_past_the_dataclass():
    p = SamplingParams()
    object.__setattr__(p, "temperature", -1.0)
    with pytest.raises(EngineError) as e:
        check_params(p)
    assert e.value.code == "invalid_temperature"
    p = SamplingParams()
    object.__setattr__(p, "stop", ("",))
    with pytest.raises(EngineError) as e:
        check_params(p)
    assert e.value.code == "invalid_stop"
