"""The /v1 surface: unknown routes and parameters we do not implement (issue #19, bad input)."""

import json

import httpx
import jsonschema
import openai
import pytest
from django.test import Client

from core.error_codes import DomainError
from inference_client.validation import (
    NOT_IMPLEMENTED,
    check_chat_request,
    check_embeddings_request,
    check_text_request,
)
from tests.factories import UserFactory

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
POINT = {"type": "object", "additionalProperties": False, "required": ["x", "y"],
         "properties": {"x": {"type": "integer", "minimum": -9, "maximum": 9},
                        "y": {"type": "integer", "minimum": -9, "maximum": 9}}}
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
UNKNOWN = ["/v1/nothing", "/v1/files/file-1/nothing", "/v1/", "/api/nothing"]


@pytest.mark.parametrize("value", [
    pytest.param(v, id=f"{name}={v!r}") for name, v in [
        ("frequency_penalty", 0.5), ("presence_penalty", -1), ("logit_bias", {"5": 10}),
        ("metadata", {"a": "b"}), ("store", True),
        ("service_tier", "flex"), ("modalities", ["text", "audio"]), ("reasoning_effort", "low"),
        ("prediction", {"type": "content", "content": "x"}), ("audio", {"voice": "x"}),
        ("functions", [{"name": "f"}]), ("function_call", "auto"), ("web_search_options", {}),
    ]])
def test_a_parameter_we_do_not_implement_is_refused_naming_it(value, request):
    name = request.node.callspec.id.split("=")[0]
    with pytest.raises(DomainError) as e:
        check_chat_request({**CHAT, name: value})
    assert (e.value.status, e.value.field, e.value.code) == (400, name, "unsupported_parameter")


def test_null_or_the_neutral_value_of_an_unimplemented_parameter_changes_nothing_and_passes():
    body = {**CHAT, **{name: None for name in NOT_IMPLEMENTED}}
    assert check_chat_request(body).model == "m"
    neutral = {name: values[0] for name, values in NOT_IMPLEMENTED.items() if values}
    assert check_chat_request({**CHAT, **neutral}).model == "m"
    with pytest.raises(DomainError):  # False is not the neutral 0 of a penalty
        check_chat_request({**CHAT, "frequency_penalty": True})


@pytest.mark.django_db
def test_an_unknown_api_route_is_a_json_404_for_every_method_even_with_a_session_and_no_csrf_token():
    browser = Client(enforce_csrf_checks=True)  # the page middleware chain, CSRF included
    browser.force_login(UserFactory())
    for path in UNKNOWN:
        for method in METHODS:
            response = browser.generic(method, path, b"{}", content_type="application/json")
            assert response.status_code == 404, (method, path, response.content[:200])
            assert response.json()["error"]["code"] == "not_found"


async def test_the_api_handler_answers_unknown_v1_routes_with_json_404():
    from config.asgi import application

    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        for path in UNKNOWN[:3]:
            for method in METHODS:
                response = await client.request(method, path, json={})
                assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(("response_format", "param", "code"), [
    ("json", "response_format", "invalid_type"),
    ({"type": "xml"}, "response_format.type", "invalid_value"),
    ({"type": "json_object", "schema": {}}, "response_format.schema", "invalid_value"),
    ({"type": "json_schema"}, "response_format.json_schema", "invalid_type"),
    ({"type": "json_schema", "json_schema": {"schema": POINT}}, "response_format.json_schema.name",
     "invalid_type"),
    ({"type": "json_schema", "json_schema": {"name": "p", "schema": {"type": "object", "not": {}}}},
     "response_format.json_schema.schema", "unsupported_schema"),
])
def test_a_bad_response_format_is_a_400_naming_the_field(response_format, param, code):
    with pytest.raises(DomainError) as e:
        check_chat_request({**CHAT, "response_format": response_format})
    assert (e.value.status, e.value.field, e.value.code) == (400, param, code)


def _sdk(base: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0)


@pytest.mark.needs_services
def test_should_return_json_that_validates_against_the_schema_through_the_sdk(smol):
    from tests.inference_client.conftest import MODEL, SMOL, make_key

    _, raw = make_key("paid")
    client = _sdk(smol, raw)
    fmt = {"type": "json_schema", "json_schema": {"name": "point", "schema": POINT, "strict": True}}
    for seed in (1, 2, 3):
        reply = client.chat.completions.create(
            model=SMOL, messages=[{"role": "user", "content": "A point as JSON."}], response_format=fmt,
            temperature=1.0, seed=seed, max_tokens=24)
        assert reply.choices[0].finish_reason == "stop"
        jsonschema.validate(json.loads(reply.choices[0].message.content), POINT)
    chunks = client.chat.completions.create(
        model=SMOL, messages=[{"role": "user", "content": "A point as JSON."}], response_format=fmt,
        stream=True, max_tokens=24, temperature=0)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    jsonschema.validate(json.loads(text), POINT)
    # The fixed-cost engine cannot constrain decoding: refused, not ignored.
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}],
                                       response_format={"type": "json_object"})
    assert (e.value.code, e.value.param) == ("unsupported_parameter", "response_format")


@pytest.mark.parametrize(("body", "param", "code"), [
    ({"n": 0}, "n", "integer_below_min_value"),
    ({"n": 9}, "n", "integer_above_max_value"),
    ({"n": True}, "n", "invalid_type"),
    ({"logprobs": 1}, "logprobs", "invalid_type"),
    ({"top_logprobs": 2}, "top_logprobs", "invalid_value"),
    ({"logprobs": True, "top_logprobs": 21}, "top_logprobs", "integer_above_max_value"),
    ({"user": 5}, "user", "invalid_type"),
    ({"max_completion_tokens": 0}, "max_completion_tokens", "integer_below_min_value"),
])
def test_chat_options_out_of_range_are_a_400_naming_them(body, param, code):
    with pytest.raises(DomainError) as e:
        check_chat_request({**CHAT, **body})
    assert (e.value.status, e.value.field, e.value.code) == (400, param, code)


@pytest.mark.parametrize(("body", "param", "code"), [
    ({}, "prompt", "missing_required_parameter"),
    ({"prompt": ["a", "b"]}, "prompt", "unsupported_parameter"),
    ({"prompt": [1, 2]}, "prompt", "unsupported_parameter"),
    ({"prompt": "a", "suffix": "z"}, "suffix", "unsupported_parameter"),
    ({"prompt": "a", "best_of": 3}, "best_of", "unsupported_parameter"),
    ({"prompt": "a", "logprobs": 6}, "logprobs", "integer_above_max_value"),
    ({"prompt": "a", "echo": True, "logprobs": 1}, "echo", "unsupported_parameter"),
    ({"prompt": "a", "messages": []}, "messages", "unknown_parameter"),
])
def test_a_bad_completions_body_is_a_400_naming_the_field(body, param, code):
    with pytest.raises(DomainError) as e:
        check_text_request({"model": "m", **body})
    assert (e.value.status, e.value.field, e.value.code) == (400, param, code)


@pytest.mark.needs_services
def test_should_serve_n_choices_logprobs_and_legacy_completions_through_the_sdk(smol):
    from inference_client.models import UsageRecord
    from tests.inference_client.conftest import MODEL, SMOL, make_key, usage_settled

    _, raw = make_key("paid")
    client = _sdk(smol, raw)
    reply = client.chat.completions.create(
        model=SMOL, messages=[{"role": "user", "content": "Name a colour."}], n=2, logprobs=True,
        top_logprobs=2, max_completion_tokens=4, temperature=1.0, seed=3, user="end-user-7")
    assert [c.index for c in reply.choices] == [0, 1]
    for choice in reply.choices:
        tokens = choice.logprobs.content
        assert "".join(t.token for t in tokens) == choice.message.content
        assert all(len(t.top_logprobs) == 2 and t.logprob <= 0 for t in tokens)
    assert reply.usage.completion_tokens == sum(len(c.logprobs.content) for c in reply.choices)

    text = client.completions.create(model=SMOL, prompt="The capital of France is", max_tokens=4,
                                     temperature=0, echo=True, stop=["\n"])
    assert text.object == "text_completion"
    assert text.choices[0].text.startswith("The capital of France is Paris")
    lp = client.completions.create(model=SMOL, prompt="1, 2, 3,", max_tokens=3, temperature=0, logprobs=2)
    assert lp.choices[0].logprobs.tokens and len(lp.choices[0].logprobs.top_logprobs[0]) == 2

    streamed = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "abc"}],
                                              n=2, stream=True)
    texts = {0: "", 1: ""}
    for chunk in streamed:
        for choice in chunk.choices:
            texts[choice.index] += choice.delta.content or ""
    assert texts == {0: "cba", 1: "cba"}
    with pytest.raises(openai.BadRequestError) as e:  # the fixed-cost engine has no distribution
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}],
                                       logprobs=True)
    assert (e.value.code, e.value.param) == ("unsupported_parameter", "logprobs")
    usage_settled()
    assert UsageRecord.objects.filter(end_user="end-user-7").count() == 1


WEATHER = {"type": "object", "additionalProperties": False, "required": ["city"],
           "properties": {"city": {"type": "string", "maxLength": 16}, "unit": {"enum": ["C", "F"]}}}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
                                           "parameters": WEATHER}}]


@pytest.mark.parametrize(("body", "param"), [
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "array"}}}]},
     "tools[0].function.parameters"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": [1]}}]},
     "tools[0].function.parameters"),
    ({"tools": [{"type": "function", "function": {"name": "bad name"}}]}, "tools[0].function.name"),
    ({"tools": [{"type": "retrieval"}]}, "tools[0]"),
    ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
     "tool_choice.function.name"),
    ({"tool_choice": "required"}, "tool_choice"),
    ({"tools": TOOLS, "response_format": {"type": "json_object"}}, "response_format"),
    ({"messages": [{"role": "tool", "content": "18C"}]}, "messages[0].tool_call_id"),
    ({"messages": [{"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f"}}]},
                   {"role": "user", "content": "x"}]}, "messages[0].tool_calls[0]"),
])
def test_bad_tools_are_a_400_naming_the_field(body, param):
    with pytest.raises(DomainError) as e:
        check_chat_request({**CHAT, **body})
    assert (e.value.status, e.value.field) == (400, param)


@pytest.mark.needs_services
def test_should_round_trip_a_tool_call_with_the_sdk(smol):
    from tests.inference_client.conftest import MODEL, SMOL, make_key

    key, raw = make_key("paid")
    client = _sdk(smol, raw)
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    reply = client.chat.completions.create(model=SMOL, messages=messages, tools=TOOLS, tool_choice="required",
                                           max_tokens=40, temperature=0)
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.function.name == "get_weather" and call.id.startswith("call_")
    jsonschema.validate(json.loads(call.function.arguments), WEATHER)

    follow = client.chat.completions.create(
        model=SMOL, tools=TOOLS, tool_choice="none", max_tokens=6, temperature=0,
        messages=[*messages, choice.message.model_dump(exclude_none=True),
                  {"role": "tool", "tool_call_id": call.id, "content": "18 degrees and sunny"}])
    assert follow.choices[0].finish_reason in ("stop", "length") and follow.choices[0].message.content

    stream = client.chat.completions.create(
        model=SMOL, messages=messages, tools=TOOLS, stream=True, max_tokens=40, temperature=0,
        tool_choice={"type": "function", "function": {"name": "get_weather"}})
    calls, finish = [], None
    for chunk in stream:
        for c in chunk.choices:
            calls += c.delta.tool_calls or []
            finish = c.finish_reason or finish
    assert finish == "tool_calls" and calls[0].function.name == "get_weather"
    jsonschema.validate(json.loads(calls[0].function.arguments), WEATHER)

    auto = client.chat.completions.create(model=SMOL, messages=messages, tools=TOOLS, max_tokens=40,
                                          temperature=0)
    message = auto.choices[0].message
    if message.tool_calls:  # the model chose; either way the reply is well formed
        jsonschema.validate(json.loads(message.tool_calls[0].function.arguments), WEATHER)
    else:
        assert message.content and not message.content.startswith("<")

    # A saved version's tools, run by reference: the model reads the same prompt as with
    # /v1's tools above (the tools prompt), longer than without.
    from playground import services
    from tests.factories import PromptFactory

    prompt = PromptFactory(owner=key.user)
    version = services.version_create(prompt=prompt, author=key.user, body="What is the weather in {{city}}?",
                                      model_name=SMOL, tools=TOOLS, max_tokens=1, temperature=0)
    run = httpx.post(f"{smol}/api/prompts/{prompt.pk}/versions/{version.pk}/run",
                     json={"variables": {"city": "Paris"}}, headers={"Authorization": f"Bearer {raw}"},
                     timeout=60)
    assert run.status_code == 200, run.text
    plain = client.chat.completions.create(model=SMOL, messages=messages, max_tokens=1, temperature=0)
    assert run.json()["usage"]["prompt_tokens"] == auto.usage.prompt_tokens > plain.usage.prompt_tokens
    with pytest.raises(openai.BadRequestError) as e:  # no grammar on the fixed-cost engine
        client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    assert (e.value.code, e.value.param) == ("unsupported_parameter", "tools")


@pytest.mark.parametrize(("body", "param", "code"), [
    ({}, "input", "missing_required_parameter"),
    ({"input": []}, "input", "invalid_type"),
    ({"input": ["ok", ""]}, "input[1]", "invalid_value"),
    ({"input": [[1, 2, 3]]}, "input[0]", "unsupported_parameter"),
    ({"input": "x", "dimensions": 64}, "dimensions", "unsupported_parameter"),
    ({"input": "x", "encoding_format": "int8"}, "encoding_format", "invalid_value"),
    ({"input": ["x"] * 2049}, "input", "invalid_value"),
])
def test_a_bad_embeddings_body_is_a_400_naming_the_field(body, param, code):
    with pytest.raises(DomainError) as e:
        check_embeddings_request({"model": "m", **body})
    assert (e.value.status, e.value.field, e.value.code) == (400, param, code)


@pytest.mark.needs_services
def test_should_serve_embeddings_through_the_sdk_on_a_real_model(embedder):
    import numpy as np

    from tests.inference_client.conftest import EMBED, MODEL, make_key

    _, raw = make_key("paid")
    client = _sdk(embedder, raw)
    texts = ["A cat sat on the mat.", "A kitten rested on the rug.", "Quarterly revenue rose 4%."]
    reply = client.embeddings.create(model=EMBED, input=texts)  # the SDK asks for base64 and decodes it
    vectors = np.array([d.embedding for d in reply.data])
    assert [d.index for d in reply.data] == [0, 1, 2] and vectors.shape == (3, 384)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    assert reply.usage.prompt_tokens == reply.usage.total_tokens > len(texts)
    floats = httpx.post(f"{embedder}/v1/embeddings", headers={"Authorization": f"Bearer {raw}"}, timeout=30,
                        json={"model": EMBED, "input": texts[0], "encoding_format": "float"}).json()
    # Alone, not in a batch of three: llama.cpp sums in another order, equal up to float rounding.
    assert np.allclose(floats["data"][0]["embedding"], vectors[0], atol=1e-4)
    too_long = httpx.post(f"{embedder}/v1/embeddings", headers={"Authorization": f"Bearer {raw}"}, timeout=30,
                          json={"model": EMBED, "input": ["fine", "word " * 400]})
    assert too_long.status_code == 400, too_long.text
    assert too_long.json()["error"]["code"] == "context_length_exceeded"
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model=MODEL, input="x")
    assert (e.value.code, e.value.param) == ("model_not_supported", "model")
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=EMBED, messages=[{"role": "user", "content": "x"}])
    assert (e.value.code, e.value.param) == ("model_not_supported", "model")
