"""Python snippets: httpx, and the official openai SDK with base_url.

Each is a module with one function, `run_prompt`, whose keyword-only
arguments are the variables (with the saved defaults); the texts are built by
concatenating literals and the arguments, so the request carries exactly the
saved text."""

from __future__ import annotations

import builtins
import keyword

from .literals import py_str, py_value
from .spec import ExportSpec, Ref, comment_text, identifiers

PY_RESERVED = (set(keyword.kwlist) | set(keyword.softkwlist) | set(dir(builtins))
               | {"os", "httpx", "openai", "OpenAI", "client", "BASE_URL", "run_prompt", "system", "user",
                  "messages", "response", "completion", "variables", "self"})


def python_names(spec: ExportSpec) -> dict[str, str]:
    locals_ = {m.local for m in spec.messages}
    return identifiers([v.name for v in spec.variables], reserved=PY_RESERVED | locals_)


def _signature(spec: ExportSpec, names: dict[str, str], *, reference: bool) -> str:
    if not names:
        return "def run_prompt():"
    renamed = [f"{names[v.name]} is the variable {v.name}" for v in spec.variables if names[v.name] != v.name]
    note = f"# Arguments: {'; '.join(renamed)} (renamed: a Python name).\n" if renamed else ""
    args = []
    for v in spec.variables:
        if reference:
            args.append(f"{names[v.name]}=None")  # None: the saved default of the version that runs
        elif v.default is None:
            args.append(names[v.name])
        else:
            args.append(f"{names[v.name]}={py_str(v.default)}")
    return f"{note}def run_prompt(*, {', '.join(args)}):"


def _text(parts, names) -> str:
    if not parts:
        return '""'
    return " + ".join(f"str({names[p.name]})" if isinstance(p, Ref) else py_str(p) for p in parts)


def _header(spec: ExportSpec, what: str, needs: str) -> list[str]:
    return [
        f'"""Promptyard: {comment_text(spec.title)} (version {spec.version_number}), {what}.',
        "",
        f"Needs: pip install {needs}",
        '"""',
        "",
        "import os",
        "",
    ]


BASE_URL_LINES = ["# Your Promptyard server; override with PROMPTYARD_BASE_URL.",
                  'BASE_URL = os.environ.get("PROMPTYARD_BASE_URL", {base}).rstrip("/")']
KEY_COMMENT = "# The API key is read from the PROMPTYARD_API_KEY environment variable: never paste it here."


def _message_lines(spec: ExportSpec, names, indent: str) -> list[str]:
    lines = [f"{indent}{m.local} = {_text(m.parts, names)}" for m in spec.messages]
    return lines


def _messages_literal(spec: ExportSpec) -> str:
    return "[" + ", ".join(
        f'{{"role": {py_str(m.role)}, "content": {m.local}'
        + "".join(f", {py_str(k)}: {py_value(v)}" for k, v in m.extra) + "}" for m in spec.messages) + "]"


def _main() -> list[str]:
    return ["", "", 'if __name__ == "__main__":', "    print(run_prompt())", ""]


def httpx_inline(spec: ExportSpec) -> str:
    names = python_names(spec)
    lines = _header(spec, "the saved text, model and parameters", "httpx") + ["import httpx", ""]
    lines += [line.format(base=py_str(spec.base_url)) for line in BASE_URL_LINES]
    lines += ["", "", _signature(spec, names, reference=False), *_message_lines(spec, names, "    ")]
    body = [f'            "model": {py_str(spec.model)},',
            f'            "messages": {_messages_literal(spec)},']
    body += [f"            {py_str(k)}: {py_value(v)}," for k, v in spec.params.items()]
    lines += [
        "    response = httpx.post(",
        '        BASE_URL + "/v1/chat/completions",',
        "        " + KEY_COMMENT.strip(),
        '        headers={"Authorization": "Bearer " + os.environ["PROMPTYARD_API_KEY"]},',
        "        json={", *body, "        },",
        "        timeout=120,",
        "    )",
        "    response.raise_for_status()",
        '    return response.json()["choices"][0]["message"]["content"]',
    ]
    return "\n".join(lines + _main())


def openai_inline(spec: ExportSpec) -> str:
    names = python_names(spec)
    lines = _header(spec, "the saved text, model and parameters, through the openai SDK", "openai")
    lines += ["from openai import OpenAI", ""]
    lines += [line.format(base=py_str(spec.base_url)) for line in BASE_URL_LINES]
    lines += [
        "client = OpenAI(",
        '    base_url=BASE_URL + "/v1",',
        "    " + KEY_COMMENT,
        '    api_key=os.environ["PROMPTYARD_API_KEY"],',
        ")",
        "", "", _signature(spec, names, reference=False), *_message_lines(spec, names, "    "),
        "    completion = client.chat.completions.create(",
        f"        model={py_str(spec.model)},",
        f"        messages={_messages_literal(spec)},",
        *[f"        {k}={py_value(v)}," for k, v in spec.params.items()],
        "    )",
        "    return completion.choices[0].message.content",
    ]
    return "\n".join(lines + _main())


def httpx_reference(spec: ExportSpec) -> str:
    names = python_names(spec)
    ref = spec.reference
    what = (f"run by reference to the label {ref.name} (moving the label changes what runs)"
            if ref.kind == "label" else "run by reference to this version id")
    lines = _header(spec, comment_text(what, 120), "httpx") + ["import httpx", ""]
    lines += [line.format(base=py_str(spec.base_url)) for line in BASE_URL_LINES]
    given = ", ".join(f"{py_str(v.name)}: {names[v.name]}" for v in spec.variables)
    lines += [
        "", "", _signature(spec, names, reference=True),
        "    # Variables left as None take the saved default of the version that runs.",
        f"    variables = {{name: str(value) for name, value in {{{given}}}.items() if value is not None}}",
        "    response = httpx.post(",
        f"        BASE_URL + {py_str(ref.path)},",
        "        " + KEY_COMMENT.strip(),
        '        headers={"Authorization": "Bearer " + os.environ["PROMPTYARD_API_KEY"]},',
        '        json={"variables": variables},',
        "        timeout=120,",
        "    )",
        "    response.raise_for_status()",
        '    return response.json()["choices"][0]["message"]["content"]',
    ]
    return "\n".join(lines + _main())
