"""The short form of each language: what one reads at a glance and pastes.

The request is written out whole, the saved values inlined as one literal: the
version's model, parameters and messages with every variable replaced by its
saved default (a variable with no default stays as `{{name}}`, to be edited).
curl sends it from a quoted heredoc (`-d @- <<'JSON'`), in which the shell
expands nothing: the only text that could end it early is its terminator line,
and a JSON document written one member per line never has a line that is a
bare word. The parameterized scripts (variables as shell variables or function
arguments) are the "inline" form beside it.
"""

from __future__ import annotations

from .literals import js_key, js_str, js_value, json_str, json_value, py_str, py_value, sh_quote
from .spec import ExportSpec, Ref, comment_text


def short_body(spec: ExportSpec) -> dict:
    """The chat request of the short form."""
    defaults = {v.name: v.default for v in spec.variables}

    def text(parts) -> str:
        return "".join(
            (defaults[p.name] if defaults[p.name] is not None else "{{" + p.name + "}}")
            if isinstance(p, Ref) else p for p in parts)

    return {"model": spec.model,
            "messages": [{"role": m.role, "content": text(m.parts), **dict(m.extra)} for m in spec.messages],
            **spec.params}


def _pretty(value, *, string, scalar, indent: str = "", step: str = "  ", key=None) -> str:
    """One member per line: readable, and (for JSON) never a bare-word line.
    `key` writes a property name (default: as a string)."""
    key = key or string
    more = {"string": string, "scalar": scalar, "key": key}
    if isinstance(value, dict) and not any(isinstance(v, dict | list) for v in value.values()) and indent:
        # A message: one line.
        return "{" + ", ".join(f"{key(k)}: {_pretty(v, **more)}" for k, v in value.items()) + "}"
    if isinstance(value, dict):
        inner = indent + step
        items = [f"{inner}{key(k)}: {_pretty(v, indent=inner, step=step, **more)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list) and any(isinstance(v, dict) for v in value):
        inner = indent + step
        items = [inner + _pretty(v, indent=inner, step=step, **more) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + indent + "]"
    return string(value) if isinstance(value, str) else scalar(value)


def _missing_note(spec: ExportSpec, prefix: str) -> list[str]:
    missing = [v.name for v in spec.variables if v.default is None]
    if not missing:
        return []
    return [f"{prefix} Fill in {', '.join('{{' + n + '}}' for n in missing)}: no saved default."]


def curl_short(spec: ExportSpec) -> str:
    doc = _pretty(short_body(spec), string=json_str, scalar=json_value)
    end = "JSON"
    while end in doc.splitlines():  # never, for this layout; kept as the rule
        end += "_"
    return "\n".join([
        f"# Promptyard: {comment_text(spec.title)} (version {spec.version_number}). "
        "Key from PROMPTYARD_API_KEY.",
        *_missing_note(spec, "#"),
        f"curl -sS {sh_quote(spec.base_url + '/v1/chat/completions')} \\",
        '  -H "Authorization: Bearer $PROMPTYARD_API_KEY" \\',
        "  -H 'Content-Type: application/json' \\",
        f"  -d @- <<'{end}'",
        doc,
        end,
        "",
    ])


def _py_kwargs(body: dict, indent: str) -> list[str]:
    return [f"{indent}{k}={_pretty(v, string=py_str, scalar=py_value, indent=indent, step='    ')},"
            for k, v in body.items()]


def httpx_short(spec: ExportSpec) -> str:
    doc = _pretty(short_body(spec), string=py_str, scalar=py_value, indent="    ", step="    ")
    return "\n".join([
        f"# Promptyard: {comment_text(spec.title)} (version {spec.version_number}). pip install httpx",
        *_missing_note(spec, "#"),
        "import os",
        "",
        "import httpx",
        "",
        "response = httpx.post(",
        f"    {py_str(spec.base_url + '/v1/chat/completions')},",
        '    headers={"Authorization": "Bearer " + os.environ["PROMPTYARD_API_KEY"]},',
        f"    json={doc},",
        "    timeout=120,",
        ")",
        "response.raise_for_status()",
        'print(response.json()["choices"][0]["message"]["content"])',
        "",
    ])


def openai_short(spec: ExportSpec) -> str:
    return "\n".join([
        f"# Promptyard: {comment_text(spec.title)} (version {spec.version_number}). pip install openai",
        *_missing_note(spec, "#"),
        "import os",
        "",
        "from openai import OpenAI",
        "",
        f"client = OpenAI(base_url={py_str(spec.base_url + '/v1')}, "
        'api_key=os.environ["PROMPTYARD_API_KEY"])',
        "completion = client.chat.completions.create(",
        *_py_kwargs(short_body(spec), "    "),
        ")",
        "print(completion.choices[0].message.content)",
        "",
    ])


def fetch_short(spec: ExportSpec) -> str:
    doc = _pretty(short_body(spec), string=js_str, scalar=js_value, indent="  ", key=js_key)
    return "\n".join([
        f"// Promptyard: {comment_text(spec.title)} (version {spec.version_number}). "
        "Node.js 18+: node prompt.mjs",
        *_missing_note(spec, "//"),
        f"const response = await fetch({js_str(spec.base_url + '/v1/chat/completions')}, {{",
        '  method: "POST",',
        '  headers: { "Authorization": "Bearer " + process.env.PROMPTYARD_API_KEY, '
        '"Content-Type": "application/json" },',
        f"  body: JSON.stringify({doc}),",
        "});",
        'if (!response.ok) throw new Error("Promptyard answered " + response.status + ": " '
        "+ await response.text());",
        "console.log((await response.json()).choices[0].message.content);",
        "",
    ])
