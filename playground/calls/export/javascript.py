"""JavaScript (fetch) snippets: an ES module for Node.js 18+ exporting
`runPrompt(values)`; run directly, it prints the completion.

Variables are the properties of `values` under their saved names
(`runPrompt({ topic: "owls" })`). They are read from a prototype-free copy:
plain destructuring would find `constructor` or `toString` on
Object.prototype and never apply the saved default. Texts are concatenations
of literals and values."""

from __future__ import annotations

from .literals import js_key, js_str, js_value
from .spec import ExportSpec, Ref, comment_text


def _value(name: str) -> str:
    return f"String(v[{js_str(name)}])"


def _text(parts) -> str:
    if not parts:
        return '""'
    return " + ".join(_value(p.name) if isinstance(p, Ref) else js_str(p) for p in parts)


def _header(spec: ExportSpec, what: str) -> list[str]:
    return [
        f"// Promptyard: {comment_text(spec.title)} (version {spec.version_number}), {what}.",
        "// Node.js 18+ (global fetch). Save as prompt.mjs; run: node prompt.mjs",
        "// The API key is read from the PROMPTYARD_API_KEY environment variable: never paste a key here.",
        'import { pathToFileURL } from "node:url";',
        "",
        "// Your Promptyard server; override with PROMPTYARD_BASE_URL.",
        f"const BASE_URL = (process.env.PROMPTYARD_BASE_URL ?? {js_str(spec.base_url)})"
        '.replace(/\\/+$/, "");',
        "",
    ]


def _fetch(path_expr: str, body_expr: str) -> list[str]:
    return [
        f"  const response = await fetch(BASE_URL + {path_expr}, {{",
        '    method: "POST",',
        "    headers: {",
        '      "Authorization": "Bearer " + process.env.PROMPTYARD_API_KEY,',
        '      "Content-Type": "application/json",',
        "    },",
        f"    body: JSON.stringify({body_expr}),",
        "  });",
        "  if (!response.ok) {",
        '    throw new Error("Promptyard answered " + response.status + ": " + (await response.text()));',
        "  }",
        "  const completion = await response.json();",
        "  return completion.choices[0].message.content;",
        "}",
        "",
        "if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {",
        "  console.log(await runPrompt());",
        "}",
        "",
    ]


def fetch_inline(spec: ExportSpec) -> str:
    lines = _header(spec, "the saved text, model and parameters")
    lines.append("export async function runPrompt(values = {}) {")
    if spec.variables:
        defaults = ", ".join(f"[{js_str(v.name)}, {js_str(v.default)}]" for v in spec.variables
                             if v.default is not None)
        lines += ["  // The saved defaults; a property of `values` overrides one.",
                  "  const v = Object.assign(Object.create(null), "
                  f"Object.fromEntries([{defaults}]), values);"]
    for v in spec.variables:
        if v.default is None:
            lines.append(f"  if (v[{js_str(v.name)}] === undefined) throw new Error("
                         f"{js_str(f'runPrompt: {v.name} has no saved default; pass it')});")
    lines += [f"  const {m.local} = {_text(m.parts)};" for m in spec.messages]
    messages = ", ".join(f"{{ role: {js_str(m.role)}, content: {m.local}"
                         + "".join(f", {js_key(k)}: {js_value(v)}" for k, v in m.extra) + " }"
                         for m in spec.messages)
    fields = [f"model: {js_str(spec.model)}", f"messages: [{messages}]"]
    fields += [f"{k}: {js_value(v)}" for k, v in spec.params.items()]
    body = "{\n" + "".join(f"      {f},\n" for f in fields) + "    }"
    return "\n".join(lines + _fetch('"/v1/chat/completions"', body))


def fetch_reference(spec: ExportSpec) -> str:
    ref = spec.reference
    what = (f"run by reference to the label {ref.name} (moving the label changes what runs)"
            if ref.kind == "label" else "run by reference to this version id")
    lines = _header(spec, comment_text(what, 120))
    names = ", ".join(v.name for v in spec.variables) or "none"
    lines += [
        "export async function runPrompt(values = {}) {",
        f"  // Variables of the exported version: {names}. One left out takes the saved",
        "  // default of the version that runs.",
        "  const variables = Object.fromEntries(",
        "    Object.entries(values).map(([name, value]) => [name, String(value)]));",
    ]
    return "\n".join(lines + _fetch(js_str(ref.path), "{ variables }"))
