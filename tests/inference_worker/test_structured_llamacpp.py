"""Structured output on SmolLM2 (llama.cpp + llguidance): every completion validates."""

import json

import jsonschema
import pytest

from inference_protocol import structured, tools
from inference_worker.engines.base import EngineError, SamplingParams, Sequence
from inference_worker.engines.fixed_cost import FixedCostEngine
from inference_worker.engines.llamacpp import LlamaCppEngine
from tests.inference_worker.engine_driver import run

pytestmark = pytest.mark.any_profile

PERSON = {"type": "object", "additionalProperties": False, "required": ["name", "age", "colour", "tags"],
          "properties": {"name": {"type": "string", "maxLength": 12},
                         "age": {"type": "integer", "minimum": 0, "maximum": 150},
                         "colour": {"enum": ["red", "green", "blue"]},
                         "tags": {"type": "array", "items": {"type": "string", "maxLength": 8},
                                  "maxItems": 3}}}
SEEDS = 8


@pytest.fixture(scope="module")
def engine():
    eng = LlamaCppEngine(n_seq_max=SEEDS, context_window=512, n_threads=1)
    yield eng
    eng.close()


def _seqs(constraint, prompt, *, max_tokens, seeds=SEEDS):
    return [Sequence(id=f"s{seed}", messages=[{"role": "user", "content": prompt}],
                     params=SamplingParams(max_tokens=max_tokens, temperature=1.0, seed=seed,
                                           constraint=constraint)) for seed in range(seeds)]


def test_every_seed_yields_json_that_validates_against_the_schema(engine):
    constraint = structured.check_response_format(
        {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}})
    out = run(engine, {0: _seqs(constraint, "Describe a person as JSON.", max_tokens=60)})
    texts = set()
    for _tokens, text, finish in out.values():
        assert finish == "stop", text  # the grammar ended it, not max_tokens
        jsonschema.validate(json.loads(text), PERSON)
        texts.add(text)
    assert len(texts) > 1  # sampled, not one forced string


def test_json_object_mode_always_starts_an_object_and_parses_when_it_ends(engine):
    constraint = structured.check_response_format({"type": "json_object"})
    out = run(engine, {0: _seqs(constraint, "Give me a JSON object about cats.", max_tokens=12, seeds=4)})
    for _tokens, text, finish in out.values():
        assert text.startswith("{")
        if finish == "stop":
            assert isinstance(json.loads(text), dict)
    unconstrained = run(engine, {0: _seqs(None, "Give me a JSON object about cats.", max_tokens=2, seeds=4)})
    assert not all(text.startswith("{") for _t, text, _f in unconstrained.values())


@pytest.mark.parametrize(("schema", "named"), [
    ({"type": "object", "if": {"properties": {"a": {}}}}, "if"),
    ({"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}}, "nowhere"),
])
def test_a_schema_that_cannot_be_enforced_is_refused_naming_what(schema, named):
    with pytest.raises(structured.InvalidInput) as e:
        structured.check_response_format({"type": "json_schema",
                                          "json_schema": {"name": "x", "schema": schema}})
    assert e.value.kind == "unsupported_schema" and named in str(e.value)
    assert e.value.field == "response_format.json_schema.schema"


def test_an_engine_without_constrained_decoding_refuses_it():
    with pytest.raises(EngineError) as e:
        FixedCostEngine().check_supported(SamplingParams(constraint={"type": "json_object"}))
    assert e.value.code == "unsupported_parameter"


def test_logprobs_come_from_the_models_own_distribution(engine):
    seq = Sequence(id="lp", messages=[{"role": "user", "content": "Name a fruit."}],
                   params=SamplingParams(max_tokens=6, temperature=0.0, logprobs=3))
    (_tokens, text, _finish), = run(engine, {0: [seq]}).values()
    entries = seq.meta["logprobs"]
    assert "".join(e["token"] for e in entries) == text and len(entries) == 6
    for e in entries:
        top = [t["logprob"] for t in e["top_logprobs"]]
        assert len(top) == 3 and top == sorted(top, reverse=True)
        assert e["logprob"] == top[0] <= 0  # greedy: the likeliest token
        assert sum(2.718281828 ** lp for lp in top) <= 1.0 + 1e-9


def test_a_raw_prompt_is_continued_without_the_chat_template(engine):
    raw = Sequence(id="raw", messages=[{"role": "user", "content": "The capital of France is"}],
                   params=SamplingParams(max_tokens=3, temperature=0.0, raw_prompt=True))
    chat = Sequence(id="chat", messages=[{"role": "user", "content": "The capital of France is"}],
                    params=SamplingParams(max_tokens=3, temperature=0.0))
    out = run(engine, {0: [raw, chat]})
    assert len(raw.prompt_tokens) < len(chat.prompt_tokens) // 2  # no template around it
    assert "Paris" in out["raw"][1]


WEATHER = {"type": "object", "additionalProperties": False, "required": ["city", "unit"],
           "properties": {"city": {"type": "string", "maxLength": 16}, "unit": {"enum": ["C", "F"]}}}


def test_a_forced_tool_call_has_arguments_that_validate_for_every_seed(engine):
    defined = tools.check_tools([
        {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
        {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object",
                                                                            "properties": {}}}}])
    constraint = tools.tool_constraint(defined, "get_weather", parallel=False)
    prompt = tools.tools_prompt(defined, "get_weather") + "\n\nWhat is the weather in Paris?"
    out = run(engine, {0: _seqs(constraint, prompt, max_tokens=40, seeds=4)})
    for _tokens, text, finish in out.values():
        assert finish == "stop", text
        (call,) = tools.parse_calls(text)
        assert call["function"]["name"] == "get_weather"
        jsonschema.validate(json.loads(call["function"]["arguments"]), WEATHER)
