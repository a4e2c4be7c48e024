"""The playground's run pane reads a run in a real browser: a structured-output run
shows its parsed object with whether it validates against the schema, a run with
tools shows each call's name and arguments and takes the user's answers to
them, on SmolLM2 (llama.cpp, constrained
decoding) served by the in-process worker."""

import json
import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import E2E_MODELS, _server_env, screenshot
from tests.e2e.test_playground_ui import create_prompt, save, sign_up
from tests.livesubprocess import free_port, running_server

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]

SMOL = "smollm2"
NAME = {"type": "string", "maxLength": 24}
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["city", "country"],
          "properties": {"city": NAME, "country": NAME}}
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "required": ["city"], "additionalProperties": False,
                   "properties": {"city": NAME}}}}]


@pytest.fixture(scope="module")
def live_url(django_db_setup, django_db_blocker, tmp_path_factory):
    """The e2e server, with SmolLM2 beside the fixed-cost model (loaded at its first run)."""
    models = {**json.loads(E2E_MODELS),
              SMOL: {"engine": "llamacpp", "n_seq_max": 2, "context_window": 1024, "n_threads": 1}}
    env = {**_server_env(tmp_path_factory.mktemp("e2e-var")), "INFERENCE_MODELS": json.dumps(models)}
    port = free_port()
    args = ["-m", "uvicorn", "config.asgi:application", "--port", str(port), "--lifespan", "off"]
    with running_server(args, env, port) as server:
        yield server.base


def set_range(page, selector, value):
    page.eval_on_selector(selector, "(el, v) => { el.value = v; el.dispatchEvent(new Event('input')); }",
                          value)


def run(page):
    page.click("#run-btn")
    expect(page.locator("#stat-finish")).to_contain_text("finish", timeout=60_000)


def test_should_show_the_parsed_object_and_tool_calls_of_a_run(live_url, new_page, console_errors):
    page = new_page()
    sign_up(page, live_url)
    create_prompt(page, live_url, "Structured")
    page.fill("#body-input", "Name one city in France, as JSON with its country.")
    page.select_option("#model-select", SMOL)
    set_range(page, "#temperature", "0")
    page.fill("#max-tokens", "48")

    # A JSON schema: the run's output parses, shows as a tree, and validates.
    page.select_option("#response-format", "json_schema")
    expect(page.locator("#response-schema")).to_be_visible()
    page.fill("#response-schema", json.dumps(SCHEMA))
    run(page)
    parsed = page.locator("#parsed")
    expect(parsed.locator(".result-status")).to_have_text("Valid against the response schema")
    expect(parsed.locator(".jt-key")).to_have_text(["city", "country"])
    value = json.loads(page.locator("#output").inner_text())
    assert set(value) == {"city", "country"}
    expect(parsed.locator(".jt-string").first).to_have_text(json.dumps(value["city"]))
    screenshot(page, "playground-structured")

    # Cut by max tokens: not JSON, and the pane says why.
    page.fill("#max-tokens", "3")
    run(page)
    expect(page.locator("#parsed .result-status")).to_have_attribute("data-valid", "false")
    expect(page.locator("#parsed .result-status")).to_contain_text("Not valid JSON (cut by max tokens)")

    # The schema is saved with the version and comes back with it.
    page.fill("#max-tokens", "48")
    save(page, "with a schema", 1)
    page.reload()
    expect(page.locator("#response-format")).to_have_value("json_schema")
    assert json.loads(page.locator("#response-schema").input_value()) == SCHEMA

    # Tools, a call required: the pane lists the call, its name and its checked arguments.
    page.select_option("#response-format", "text")
    page.fill("#body-input", "What is the weather in Paris?")
    page.fill("#tools-input", json.dumps(TOOLS))
    page.select_option("#tool-choice", "required")
    run(page)
    expect(page.locator("#stat-finish")).to_have_text("finish: tool_calls")
    calls = page.locator("#tool-calls .tool-call")
    expect(calls).to_have_count(1)
    expect(calls.locator(".tool-name")).to_have_text("get_weather")
    expect(calls.locator(".result-status")).to_have_text("Valid against get_weather's parameters")
    expect(calls.locator(".jt-key")).to_have_text(["city"])
    expect(calls.locator(".hint").first).to_have_text(re.compile(r"^call_"))
    screenshot(page, "playground-tool-calls")

    # Answer the call: the conversation goes on with the call and its result.
    call_id = calls.locator(".hint").first.inner_text()
    weather = '{"temperature_c": 22, "sky": "sunny"}'
    page.fill("#tool-answer-0", weather)
    with page.expect_response("**/v1/chat/completions") as response:
        page.click("#tool-answer-send")
    assert response.value.status == 200
    sent = response.value.request.post_data_json["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[1]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert sent[2] == {"role": "tool", "tool_call_id": call_id, "content": weather}
    assert response.value.request.post_data_json["tool_choice"] == "auto"  # called: now it may answer
    expect(page.locator("#stat-finish")).to_contain_text("finish", timeout=60_000)
    expect(page.locator("#output")).not_to_have_class(re.compile(r"\bempty\b"))
    expect(page.locator("#run-error")).to_be_hidden()

    # Tools that are not JSON: refused before anything is sent.
    page.fill("#tools-input", "[{")
    page.click("#run-btn")
    expect(page.locator("#run-error")).to_contain_text("Tools is not valid JSON")
    assert console_errors == []
