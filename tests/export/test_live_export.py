"""Exported code run for real against the live stack (uvicorn + Celery
worker + Redis + PostgreSQL, fixed-cost engine: the answer is the last
message reversed), and saved versions run by reference."""

import json

import httpx
import pytest

from playground import services
from sharing.models import Grant
from tests.export.conftest import MODEL, clean_env, run_node, run_python, run_sh
from tests.factories import PromptFactory
from tests.inference_client.conftest import make_key

pytestmark = pytest.mark.needs_services  # a live server and a Celery worker on RabbitMQ and Redis


def _version(prompt, *, body, parent=None, **fields):
    return services.version_create(prompt=prompt, author=prompt.owner, body=body, model_name=MODEL,
                                   parent_id=parent.pk if parent else None, **fields)


def _export(live, key, version, **params):
    response = httpx.get(f"{live}/api/prompts/{version.prompt_id}/versions/{version.pk}/export",
                         params=params, headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def _code(export, lang, form):
    (code,) = [s["code"] for s in export["snippets"] if s["lang"] == lang and s["form"] == form]
    return code


def _write(tmp_path, name, code):
    path = tmp_path / name
    path.write_text(code, encoding="utf-8")
    return str(path)


def test_should_get_a_completion_from_each_exported_snippet_on_the_live_server(live, tmp_path):
    key, raw = make_key("paid")
    prompt = PromptFactory(owner=key.user, title="Greeter")
    body = "Say \"hi\" to {{name}} & it's $HOME `id` \\n {{ tone }}\n"
    version = _version(prompt, body=body, system="Be {{tone}}.", variables={"name": "Ada", "tone": "brief"},
                       temperature=0.0, max_tokens=500, stop=["@@"])
    export = _export(live, raw, version)
    assert export["base_url"] == live and raw not in json.dumps(export)

    def expect(name, tone="brief"):
        return body.replace("{{name}}", name).replace("{{ tone }}", tone)[::-1]

    env = clean_env(PROMPTYARD_API_KEY=raw)
    result = run_sh(_code(export, "curl", "inline"), tmp_path, dict(env, PY_NAME="Grace 'G' \"$x\""))
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["choices"][0]["message"]["content"] == expect("Grace 'G' \"$x\"")
    assert answer["model"] == MODEL and answer["usage"]["total_tokens"] > 0

    jobs = [(_write(tmp_path, "a.py", _code(export, "python-httpx", "inline")), {"name": "Linus"}),
            (_write(tmp_path, "b.py", _code(export, "python-openai", "inline")), {"tone": "terse"})]
    assert run_python(jobs, tmp_path, env) == [expect("Linus"), expect("Ada", "terse")]

    js = _write(tmp_path, "prompt.mjs", _code(export, "javascript", "inline"))
    assert run_node([(js, {"name": "Ken"})], tmp_path, env) == [expect("Ken")]


def test_should_run_what_the_label_points_at_after_the_label_moves(live, tmp_path):
    key, raw = make_key("paid")
    prompt = PromptFactory(owner=key.user)
    first = _version(prompt, body="first {{name}}", variables={"name": "Ada"})
    second = _version(prompt, body="second {{name}}!", parent=first, variables={"name": "Bob"})
    services.label_move(prompt=prompt, name="production", version_id=first.pk, expected_version_id=None,
                        actor=key.user)
    export = _export(live, raw, first)
    assert export["reference"]["name"] == "production"
    env = clean_env(PROMPTYARD_API_KEY=raw)
    sh_code = _code(export, "curl", "reference")
    py = _write(tmp_path, "ref.py", _code(export, "python-httpx", "reference"))
    js = _write(tmp_path, "ref.mjs", _code(export, "javascript", "reference"))

    def run_all():
        out = json.loads(run_sh(sh_code, tmp_path, dict(env, PY_NAME="sh")).stdout)
        return [out["choices"][0]["message"]["content"],
                *run_python([(py, {"name": "py"}), (py, {})], tmp_path, env),
                *run_node([(js, {"name": "js"})], tmp_path, env)]

    assert run_all() == ["hs tsrif", "yp tsrif", "adA tsrif", "sj tsrif"]
    services.label_move(prompt=prompt, name="production", version_id=second.pk,
                        expected_version_id=first.pk, actor=key.user)
    # The same code, unchanged, now runs the second version (and its default).
    assert run_all() == ["!hs dnoces", "!yp dnoces", "!boB dnoces", "!sj dnoces"]


def _run(live, key, path, body=None, **kwargs):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.post(f"{live}/api/prompts/{path}/run", json=body if body is not None else {},
                      headers=headers, timeout=30, **kwargs)


def test_should_run_a_saved_version_with_its_frozen_model_and_check_access(live):
    key, raw = make_key("paid")
    prompt = PromptFactory(owner=key.user)
    version = _version(prompt, body="{{greeting}}, {{name}}", variables={"greeting": "Hi", "name": None},
                       max_tokens=4)
    path = f"{prompt.pk}/versions/{version.pk}"

    ok = _run(live, raw, path, {"variables": {"name": "Ada"}})
    assert ok.status_code == 200, ok.text
    assert ok.headers["x-prompt-version"] == str(version.pk)
    answer = ok.json()
    assert answer["object"] == "chat.completion" and answer["model"] == MODEL
    assert answer["choices"][0]["message"]["content"] == "adA "  # max_tokens=4 from the version
    assert answer["choices"][0]["finish_reason"] == "length"

    missing = _run(live, raw, path, {"variables": {}})
    assert missing.status_code == 400
    error = missing.json()["error"]
    assert (error["code"], error["field"], error["missing"]) == ("missing_variables", "variables", ["name"])
    assert "name" in error["message"]
    unknown = _run(live, raw, path, {"variables": {"name": "x", "nope": "y"}})
    assert unknown.status_code == 400 and unknown.json()["error"]["unknown"] == ["nope"]
    frozen = _run(live, raw, path, {"variables": {"name": "x"}, "temperature": 1})
    assert frozen.status_code == 400
    assert (frozen.json()["error"]["code"], frozen.json()["error"]["field"]) == ("frozen_parameter",
                                                                                  "temperature")

    assert _run(live, None, path, {"variables": {"name": "x"}}).status_code == 401
    stranger_key, stranger = make_key("paid")
    assert _run(live, stranger, path, {"variables": {"name": "x"}}).status_code == 404
    Grant.objects.create(prompt=prompt, user=stranger_key.user, role="viewer", created_by=key.user)
    viewer = _run(live, stranger, path, {"variables": {"name": "Bo"}})
    assert viewer.status_code == 200 and viewer.json()["choices"][0]["message"]["content"] == "oB ,"

    with httpx.stream("POST", f"{live}/api/prompts/{path}/run", timeout=30,
                      json={"variables": {"name": "Cy"}, "stream": True},
                      headers={"Authorization": f"Bearer {raw}"}) as streamed:
        assert streamed.headers["content-type"].startswith("text/event-stream")
        events = [line[6:] for line in streamed.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "yC ,"


def test_should_answer_404_for_an_unknown_label(live):
    key, raw = make_key("paid")
    prompt = PromptFactory(owner=key.user)
    _version(prompt, body="x")
    response = _run(live, raw, f"{prompt.pk}/labels/production")
    assert response.status_code == 404 and response.json()["error"]["code"] == "label_not_found"
