"""Detokenizing and stop-sequence handling shared by the token engines."""

from __future__ import annotations

import numpy as np
import pytest

from inference_worker.engines.base import EngineError, SamplingParams
from inference_worker.engines.sampling import Sampler, TextStream

# Touches no part the two profiles differ in: runs once, in the services pass.
pytestmark = pytest.mark.any_profile


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


@pytest.mark.parametrize(("params", "code"), [
    ({"temperature": -1.0}, "invalid_temperature"),
    ({"temperature": 1.6}, "invalid_temperature"),      # above INFERENCE_TEMPERATURE_MAX
    ({"stop": ("",)}, "invalid_stop"),
    ({"stop": ("a", "b", "c")}, "invalid_stop"),         # more than INFERENCE_MAX_STOP_SEQUENCES
    ({"top_p": 0.0}, "invalid_top_p"),
    ({"max_tokens": 0}, "invalid_max_tokens"),
    ({"seed": -1}, "invalid_seed"),
])
def test_engines_refuse_what_the_gateway_refuses_with_its_limits(settings, params, code):
    settings.INFERENCE_TEMPERATURE_MAX = 1.5
    settings.INFERENCE_MAX_STOP_SEQUENCES = 2
    with pytest.raises(EngineError) as e:
        SamplingParams(**params)
    assert e.value.code == code
