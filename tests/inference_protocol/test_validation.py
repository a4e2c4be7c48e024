"""The one checker of sampling parameters and messages, and the surfaces that use it."""

import pytest

from core.error_codes import DomainError
from inference_client.validation import check_chat_request
from inference_protocol.validation import InvalidInput, check_messages, check_sampling
from tests.factories import PromptFactory, PromptVersionFactory

CHAT = [{"role": "user", "content": "hi"}]


@pytest.fixture
def prompt_root(user):
    prompt = PromptFactory(owner=user)
    return prompt, PromptVersionFactory(prompt=prompt, body="root\n")


def test_a_lone_surrogate_in_a_message_is_refused_naming_the_field():
    with pytest.raises(InvalidInput) as e:
        check_messages([{"role": "system", "content": "ok"}, {"role": "user", "content": "bad \ud800"}])
    assert (e.value.field, e.value.kind) == ("messages[1].content", "invalid_unicode")


@pytest.mark.parametrize("role", [{}, [], ["user"], 1, None])
def test_a_role_that_is_not_a_string_is_refused_naming_the_field(role):
    # The fuzzer's {"role": {}}: an unhashable value once raised TypeError (a 500).
    with pytest.raises(DomainError) as e:
        check_chat_request({"model": "m", "messages": [{"role": role, "content": "hi"}]})
    assert (e.value.status, e.value.code) == (400, "invalid_value")
    assert e.value.field == "messages[0].role"


def test_the_gateway_and_the_playground_read_the_same_limits(settings, auth_client, prompt_root):
    settings.INFERENCE_TEMPERATURE_MAX = 1.0
    settings.INFERENCE_MAX_STOP_SEQUENCES = 1
    with pytest.raises(InvalidInput):
        check_sampling(temperature=1.5)
    for field, value in (("temperature", 1.5), ("stop", ["a", "b"])):
        with pytest.raises(DomainError) as e:
            check_chat_request({"model": "m", "messages": CHAT, field: value})
        assert (e.value.status, e.value.field) == (400, field)
        prompt, root = prompt_root
        response = auth_client.post(f"/api/prompts/{prompt.pk}/versions", {
            "parent": str(root.pk), "model": "fixed-cost", "body": "x", field: value}, format="json")
        assert response.status_code == 400, response.json()
        assert response.json()["error"]["field"] == field


@pytest.mark.parametrize(("params", "field", "kind"), [
    ({"seed": -1}, "seed", "integer_below_min_value"),
    ({"seed": 2**64}, "seed", "integer_above_max_value"),
    ({"seed": 1.5}, "seed", "invalid_type"),
    ({"max_tokens": 10**6}, "max_tokens", "integer_above_max_value"),
    ({"top_p": float("nan")}, "top_p", "invalid_value"),
    ({"temperature": True}, "temperature", "invalid_type"),
    ({"stop": ["ok", "\udfff"]}, "stop[1]", "invalid_unicode"),
])
def test_bad_sampling_parameters_name_their_field(params, field, kind):
    with pytest.raises(InvalidInput) as e:
        check_sampling(**params)
    assert (e.value.field, e.value.kind) == (field, kind)


def test_openai_content_parts_and_null_assistant_turns_are_text():
    request = check_chat_request({"model": "m", "messages": [
        {"role": "assistant", "content": None},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]})
    assert request.messages == [{"role": "assistant", "content": ""}, {"role": "user", "content": "ab"}]
