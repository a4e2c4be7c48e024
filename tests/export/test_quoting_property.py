"""Property: whatever the saved text, the exported code sends exactly it.

Both forms: the short one (the saved values inlined, curl from a quoted
heredoc) and the parameterized scripts. Hypothesis builds hostile versions (quotes, backslashes, newlines, $,
backticks, unicode, NUL in the saved text, {{ }} that are and are not
variables, variable names that are keywords or Object.prototype properties,
tools whose descriptions and property names are all of those, __proto__ included)
and runs every snippet for real against a capture server; the parsed request
body must equal the request the server itself would build for that version
(playground.calls.builder.version_chat_body), and a by-reference call must carry
exactly the given variables. No database: versions are unsaved objects.
"""

import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playground.calls.builder import version_chat_body
from playground.calls.export import python, shell, snippets_render
from playground.calls.export.spec import Reference, export_spec
from playground.models import Prompt, PromptVersion
from tests.export.conftest import clean_env, run_node, run_python, run_sh

# The short forms are scripts (top-level code that prints): these wrappers give
# them the runners' run_prompt / runPrompt, so one interpreter runs them all.
PY_WRAPPER = """import contextlib, io, runpy
def run_prompt():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path({path!r}, run_name="__main__")
    return out.getvalue().strip()
"""
JS_WRAPPER = """export async function runPrompt() {{
  const lines = [], log = console.log;
  console.log = (...args) => lines.push(args.join(" "));
  try {{ await import({url}); }} finally {{ console.log = log; }}
  return lines.join("\\n");
}}
"""


def _short_job(tmp, capture, tag, lang, code):
    """A wrapper module around a short script whose base URL carries `tag`."""
    assert code.count(capture.url) == 1, code
    ext = "mjs" if lang == "javascript" else "py"
    script = tmp / f"{tag}-script.{ext}"
    script.write_text(code.replace(capture.url, f"{capture.url}/{tag}"), encoding="utf-8")
    wrapper = tmp / f"{tag.replace('-', '_')}_wrapper.{ext}"
    wrapper.write_text(PY_WRAPPER.format(path=str(script)) if ext == "py" else
                       JS_WRAPPER.format(url=json.dumps(script.as_uri())), encoding="utf-8")
    return str(wrapper)

# Touches no part the two profiles differ in: runs once, in the services pass.
pytestmark = pytest.mark.any_profile

HOSTILE = "\"'\\\n\r\t $`!%{}*?[]#;&|<>()~\u00e9\u2028\u2029\u202e\u200b\u0085\x7f\x01\x1b\ufeff😀\U000e0001"
VALUE = st.text(alphabet=st.one_of(st.sampled_from(HOSTILE), st.characters(
    blacklist_categories=("Cs",), blacklist_characters="\x00")), max_size=12)
NAMES = ["topic", "class", "constructor", "__proto__", "path", "input", "x", "Topic", "lc_all", "http_proxy"]


@st.composite
def templates(draw, names):
    parts = []
    for _ in range(draw(st.integers(0, 5))):
        if names and draw(st.booleans()):
            space = draw(st.sampled_from(["", " ", "  ", "\t"]))
            parts.append("{{" + space + draw(st.sampled_from(names)) + space + "}}")
        else:
            # Saved text may hold NUL (JSON carries it as \u0000) and brace runs
            # that are not variables: {{ 1x }}, {x}, {{{.
            parts.append(draw(st.one_of(VALUE, st.sampled_from(["\x00", "{{ 1x }}", "{x}", "{{{", "}}"]))))
    return "".join(parts)


# Function tools as a version saves them: hostile descriptions and property names, booleans and nulls
# (Python writes True / None), nested schemas.
TOOLS = st.lists(st.builds(
    lambda name, description, prop, strict: {"type": "function", "function": {
        "name": name, "description": description, "strict": strict, "parameters": {
            "type": "object", "additionalProperties": False, "required": [prop],
            "properties": {prop: {"type": ["string", "null"], "description": description}}}}},
    name=st.sampled_from(["get_weather", "a-b_9"]), description=VALUE,
    prop=st.one_of(st.sampled_from(NAMES), VALUE.filter(bool)), strict=st.booleans()),
    max_size=2, unique_by=lambda tool: tool["function"]["name"])


@st.composite
def versions(draw):
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=4))
    system = draw(st.one_of(st.just(""), templates(names)))
    body = draw(templates(names)) + "".join("{{" + n + "}}" for n in names)  # every name is used
    defaults = {n: draw(st.one_of(st.none(), VALUE)) for n in names}
    overrides = {n: draw(VALUE) for n in names if defaults[n] is None or draw(st.booleans())}
    params = draw(st.fixed_dictionaries({}, optional={
        "temperature": st.sampled_from([0, 0.2, 1.5]), "max_tokens": st.integers(1, 4096),
        "top_p": st.sampled_from([0.1, 1]), "stop": st.lists(VALUE.filter(bool), min_size=1, max_size=4),
        "seed": st.integers(0, 2**40)}))
    # Turns between the system text and the body: templates of every role, an assistant's
    # tool calls (hostile arguments text) and a tool's answer.
    turns = draw(st.lists(st.one_of(
        st.builds(lambda role, content: {"role": role, "content": content},
                  st.sampled_from(["user", "assistant", "system"]), templates(names)),
        st.builds(lambda content, args: {"role": "assistant", "content": content, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": args}}]},
            templates(names), VALUE),
        st.builds(lambda content: {"role": "tool", "content": content, "tool_call_id": "call_1"},
                  templates(names))), max_size=3))
    tools = draw(TOOLS)
    version = PromptVersion(
        prompt=Prompt(title=draw(VALUE)), number=1, model_name=draw(st.sampled_from(["m", "we'ird $m\"od"])),
        system=system, variables=defaults, temperature=params.get("temperature"),
        max_tokens=params.get("max_tokens"), top_p=params.get("top_p"), stop=params.get("stop", []),
        seed=params.get("seed"), messages=turns, tools=tools,
        tool_choice=draw(st.sampled_from([None, "none", "required"])) if tools else None)
    return version, body, overrides


def _check(capture, tag, expected_body):
    sent = capture.take(f"/{tag}/")
    assert sent["headers"]["Authorization"] == "Bearer sk-test-key"
    assert json.loads(sent["raw"].decode("utf-8")) == expected_body
    return sent


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases=st.lists(versions(), min_size=1, max_size=3), shell_name=st.sampled_from(["dash", "bash"]),
       locale=st.sampled_from(["C", "C.UTF-8"]))
def test_should_send_exactly_the_saved_text_from_every_snippet(capture, tmp_path_factory, cases,
                                                               shell_name, locale):
    tmp = tmp_path_factory.mktemp("snippets")
    py_jobs, js_jobs, checks = [], [], []
    py_short, js_short, checks_short = [], [], []
    for i, (version, body, overrides) in enumerate(cases):
        run = uuid.uuid4().hex
        path = f"/api/prompts/{version.prompt_id}/labels/production/run"
        reference = Reference("label", "production", path)
        spec = export_spec(version=version, body=body, base_url=capture.url, reference=reference)
        code = {(s["lang"], s["form"]): s["code"] for s in snippets_render(spec=spec)}
        assert all("PROMPTYARD_API_KEY" in c for c in code.values())
        inline = version_chat_body(version=version, variables=overrides, body=body)
        by_ref = {"variables": overrides}
        # The short form: the saved defaults inlined; a variable without one stays as {{name}}.
        saved = {v.name: v.default if v.default is not None else "{{" + v.name + "}}" for v in spec.variables}
        short_expected = version_chat_body(version=version, variables=saved, body=body)
        result = run_sh(code[("curl", "short")].replace(capture.url, f"{capture.url}/{run}-sh-short"), tmp,
                        clean_env(PROMPTYARD_API_KEY="sk-test-key", LANG=locale, LC_ALL=locale), shell_name)
        assert result.returncode == 0, result.stderr.decode()
        _check(capture, f"{run}-sh-short", short_expected)
        for lang in ("python-httpx", "python-openai", "javascript"):
            wrapper = _short_job(tmp, capture, f"{run}-{lang}-short", lang, code[(lang, "short")])
            (js_short if lang == "javascript" else py_short).append((wrapper, {}))
        checks_short.append((run, short_expected))
        sh_names, py_names = shell.shell_names(spec), python.python_names(spec)

        # curl: variables are environment variables of the script.
        for form, body_expected in (("inline", inline), ("reference", by_ref)):
            tag = f"{run}-sh-{form}"
            env = clean_env(PROMPTYARD_API_KEY="sk-test-key", PROMPTYARD_BASE_URL=f"{capture.url}/{tag}",
                            LANG=locale, LC_ALL=locale, **{sh_names[n]: v for n, v in overrides.items()})
            result = run_sh(code[("curl", form)], tmp, env, shell_name)
            assert result.returncode == 0, result.stderr.decode()
            assert json.loads(result.stdout)["choices"][0]["message"]["content"] == "captured"
            _check(capture, tag, body_expected)

        kwargs = {py_names[n]: v for n, v in overrides.items()}
        py_forms = (("python-httpx", "inline"), ("python-openai", "inline"), ("python-httpx", "reference"))
        for lang, form in py_forms:
            path = tmp / f"p{i}_{lang.replace('-', '_')}_{form}.py"
            path.write_text(code[(lang, form)], encoding="utf-8")
            py_jobs.append((str(path), kwargs))
        for form in ("inline", "reference"):
            path = tmp / f"j{i}_{form}.mjs"
            path.write_text(code[("javascript", form)], encoding="utf-8")
            js_jobs.append((str(path), overrides))
        checks.append((run, inline, by_ref))

    # One interpreter / one node process per language for all cases.
    py_tags = [(run, f"py{k}") for run, _, _ in checks for k in range(3)]
    js_tags = [(run, f"js{k}") for run, _, _ in checks for k in range(2)]
    _run_tagged(run_python, py_jobs, py_tags, tmp, capture, extra=py_short)
    _run_tagged(run_node, js_jobs, js_tags, tmp, capture, extra=js_short)
    for run, short_expected in checks_short:
        for lang in ("python-httpx", "python-openai", "javascript"):
            _check(capture, f"{run}-{lang}-short", short_expected)
    for run, inline, by_ref in checks:
        for k, body_expected in enumerate((inline, inline, by_ref)):
            _check(capture, f"{run}-py{k}", body_expected)
        for k, body_expected in enumerate((inline, by_ref)):
            _check(capture, f"{run}-js{k}", body_expected)


def _run_tagged(runner, jobs, tags, tmp, capture, extra=()):
    """Give each snippet its own base URL (a path prefix the capture server
    sees) by rewriting the saved default base URL in its file."""
    for (path, _), (run, lang_form) in zip(jobs, tags, strict=True):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        quoted = json.dumps(capture.url)
        assert text.count(quoted) == 1
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(quoted, json.dumps(f"{capture.url}/{run}-{lang_form}")))
    results = runner([*jobs, *extra], tmp, clean_env(PROMPTYARD_API_KEY="sk-test-key"))
    assert results == ["captured"] * (len(jobs) + len(extra))


def test_should_send_a_tool_property_named_proto_from_javascript(capture, tmp_path):
    """`{"__proto__": ...}` in a JavaScript object literal sets the prototype and makes no
    property: the one key the property test may not draw, here every time."""
    tool = {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "required": ["__proto__"], "properties": {"__proto__": {"type": "string"}}}}}
    version = PromptVersion(prompt=Prompt(title="t"), number=1, model_name="m", tools=[tool])
    spec = export_spec(version=version, body="hi", base_url=capture.url,
                       reference=Reference("label", "production", "/api/prompts/p/labels/production/run"))
    code = {(s["lang"], s["form"]): s["code"] for s in snippets_render(spec=spec)}
    inline = tmp_path / "proto_inline.mjs"
    inline.write_text(code[("javascript", "inline")], encoding="utf-8")
    short = _short_job(tmp_path, capture, "proto-js-short", "javascript", code[("javascript", "short")])
    _run_tagged(run_node, [(str(inline), {})], [("proto", "js-inline")], tmp_path, capture,
                extra=[(short, {})])
    expected = version_chat_body(version=version, variables={}, body="hi")
    assert expected["tools"] == [tool]
    for tag in ("proto-js-inline", "proto-js-short"):
        _check(capture, tag, expected)
