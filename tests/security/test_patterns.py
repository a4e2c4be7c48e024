"""H1: no user-supplied pattern runs on Python's backtracking `re`.

`(?s)^(?:.|.)*\\x00$` takes Python's `re` 2^n steps over n characters and holds
the GIL all along: scored by an eval run on a server's thread, it froze the
whole process. User patterns now run on RE2 (core.patterns), linear in the
text; what RE2 cannot run is refused when it is saved."""

import json
import re
import time

import httpx
import pytest

from core import patterns
from core.error_codes import DomainError
from evals import evaluators as ev
from tests.factories import PromptFactory
from tests.livesubprocess import embedded_env, free_port, running_server
from tests.polling import wait_for

WORST = r"(?s)^(?:.|.)*\x00$"
CATASTROPHIC = [WORST, r"^(a+)+$", r"^(a|aa)+$", r"^(a|a?)+$", r"(x+x+)+y", r"^(\w+\s?)*$"]
LONG = "a" * 100_000 + "!"


def _score(name, output, expected=None, **args):
    spec = ev.check_evaluators([{"name": name, "args": args}])
    return ev.score_output(spec, output=output, expected=expected, variables={})[name]


@pytest.mark.any_profile
@pytest.mark.timeout(30)  # Python's re never finishes one of these; RE2 takes milliseconds for all
@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_catastrophic_patterns_finish_on_re2_in_the_regex_and_json_schema_evaluators(pattern):
    assert _score("regex", LONG, pattern=pattern) == {"score": 0.0, "passed": False, "reason": "no match"}
    schema = {"type": "object", "properties": {"a": {"pattern": pattern}},
              "patternProperties": {pattern: {"type": "integer"}}, "additionalProperties": False}
    score = _score("json_schema", json.dumps({"a": LONG, LONG: 1}), schema=schema)
    assert score["passed"] is False and "does not match" in score["reason"]
    judged = ev.judge_score(json.dumps({"score": 1, "reason": LONG}), threshold=0.5,
                            schema={"properties": {"reason": {"pattern": pattern}}})
    assert judged.passed is False and "does not match" in judged.reason


@pytest.mark.any_profile
def test_re2_still_matches_what_it_should():
    assert _score("regex", "order #1234 shipped", pattern=r"#\d{4}\b")["passed"] is True
    assert _score("regex", "héllo", pattern=r"^h.llo$", full=True)["passed"] is True
    assert patterns.matches("b", "\ud800b")  # a lone surrogate (JSON can carry one) is no error


@pytest.mark.any_profile
@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?=a)a", r"(?<!a)b", r"a\Z", "("])
def test_a_pattern_re2_cannot_run_is_a_400_naming_the_field(pattern):
    with pytest.raises(DomainError) as exc:
        ev.check_evaluators([{"name": "regex", "args": {"pattern": pattern}}])
    assert (exc.value.status, exc.value.code) == (400, "unsupported_pattern")
    assert exc.value.field == "evaluators.regex.pattern" and "RE2" in exc.value.message
    nested = {"type": "object", "properties": {"items": {"type": "array", "items": {
        "type": "object", "patternProperties": {pattern: {}}}}}}
    for schema, field in [({"properties": {"a": {"pattern": pattern}}}, "properties.a.pattern"),
                          (nested, "properties.items.items.patternProperties")]:
        with pytest.raises(DomainError) as exc:
            ev.check_evaluators([{"name": "json_schema", "args": {"schema": schema}}])
        assert exc.value.code == "unsupported_pattern"
        assert exc.value.field == f"evaluators.json_schema.schema.{field}"


@pytest.mark.any_profile
def test_limits_and_schemas_whose_patterns_would_escape_re2_are_refused(settings):
    with pytest.raises(DomainError) as exc:
        ev.check_evaluators([{"name": "regex", "args": {"pattern": "a" * 1001}}])
    assert exc.value.code == "pattern_too_long" and exc.value.extra == {"limit": 1000}
    settings.USER_PATTERN_MAX_MEM = 64 * 1024
    with pytest.raises(DomainError) as exc:
        ev.check_evaluators([{"name": "regex", "args": {"pattern": r"\pL{1000}"}}])
    assert exc.value.code == "unsupported_pattern" and exc.value.extra == {"limit": 64 * 1024}
    for schema in ({"$schema": "http://json-schema.org/draft-04/schema#", "patternProperties": {"a": {}}},
                   {"unevaluatedProperties": False, "patternProperties": {"a": {}}}):
        with pytest.raises(DomainError) as exc:
            ev.check_evaluators([{"name": "json_schema", "args": {"schema": schema}}])
        assert exc.value.code == "unsupported_schema"


@pytest.mark.any_profile
@pytest.mark.django_db
def test_a_response_schema_pattern_re2_refuses_is_a_400_when_the_version_is_saved(auth_client, user):
    """A judge's reply is validated against its version's response schema by the server."""
    prompt = PromptFactory(owner=user)
    schema = {"type": "object", "properties": {"reason": {"type": "string", "pattern": "^a{2000}$"}}}
    response = auth_client.post(f"/api/prompts/{prompt.pk}/versions", {
        "body": "x", "model": "fixed-cost", "response_schema": schema}, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "unsupported_pattern"
    assert error["field"] == "response_schema.properties.reason.pattern"


MODEL = "fixed-cost-patterns"


def _login(base: str) -> httpx.Client:
    client = httpx.Client(base_url=base, follow_redirects=False, timeout=10)
    page = client.get("/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    response = client.post("/login/", data={"username": "demo", "password": "promptyard-demo",
                                            "csrfmiddlewaretoken": token})
    assert response.status_code == 302, response.text
    client.headers.update({"X-CSRFToken": client.cookies["csrftoken"], "Origin": base})
    return client


@pytest.mark.any_profile
def test_healthz_answers_at_once_while_a_run_scores_the_worst_pattern(tmp_path):
    """A live `serve`: an eval run scores long outputs with WORST (regex and json_schema
    evaluators) on its driver thread while /healthz is asked again and again."""
    models = {MODEL: {"engine": "fixed_cost", "max_inputs": 50, "call_s": 0.005}}
    env = embedded_env(tmp_path, INFERENCE_MODELS=json.dumps(models), DEFAULT_MODEL=MODEL)
    port = free_port()
    with running_server(["manage.py", "serve", "--port", str(port)], env, port) as server:
        client = _login(server.base)
        prompt = client.post("/api/prompts/", json={"title": "patterns"}).json()
        version = client.post(f"/api/prompts/{prompt['id']}/versions", json={
            "body": "{{q}}", "model": MODEL, "max_tokens": 2000}).json()
        # The engine answers q reversed: a JSON object whose "a" is 1500 characters, no NUL.
        output = json.dumps({"a": "b" * 1500})
        rows = [{"variables": {"q": output[::-1]}} for _ in range(200)]
        dataset = client.post("/api/datasets/", json={"name": "long outputs", "rows": rows}).json()
        schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": WORST}}}
        run = client.post("/api/evals/runs", json={
            "dataset": dataset["id"], "columns": [{"prompt": prompt["id"], "version": version["id"]}],
            "evaluators": [{"name": "regex", "args": {"pattern": WORST}},
                           {"name": "json_schema", "args": {"schema": schema}}]})
        assert run.status_code == 201, run.text
        prober = httpx.Client(base_url=server.base, timeout=5)  # one kept-alive connection, as a balancer's
        assert prober.get("/healthz").status_code == 200
        latencies = []

        def run_done():
            started = time.monotonic()
            health = prober.get("/healthz")
            latencies.append(time.monotonic() - started)
            assert health.status_code == 200, health.text
            state = client.get(f"/api/evals/runs/{run.json()['id']}").json()
            return state if state["status"] == "done" else None

        state = wait_for(run_done, timeout=120, interval=0.02, what="the run to finish")
        page = client.get(f"/api/evals/runs/{state['id']}/results?limit=1").json()
    assert state["completed"] == 200
    cell = page["rows"][0]["cells"][0]
    assert cell["error"] is None, (cell, latencies)
    scores = cell["scores"]
    assert scores["regex"] == {"score": 0.0, "passed": False, "reason": "no match"}
    assert scores["json_schema"]["passed"] is False and "does not match" in scores["json_schema"]["reason"]
    # Never frozen: on a backtracking engine one WORST match over these outputs would hold
    # the process for far longer than a second. (An idle server answers in a few ms; under
    # CI's load on two cores one answer took 130 ms, so the bound here is for a freeze only.)
    assert len(latencies) >= 2 and max(latencies) < 1.0, latencies
