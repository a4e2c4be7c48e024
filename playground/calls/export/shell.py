"""curl snippets: a POSIX sh script that needs only sh, awk and curl.

Quoting, the part that usually goes wrong:
- The saved text is written into the script already JSON-escaped, inside
  single quotes, so the shell expands nothing in it ($, backticks, `\\`,
  `!`) and the request carries exactly the saved text. NUL, which no shell
  variable can hold, travels as the JSON escape \\u0000.
- Variables are shell variables (upper-cased names after a fixed prefix,
  `PY_`, so none is one that a program reads) defaulting to the saved
  defaults. A value is JSON-escaped at run time by a small awk program that
  reads it from the environment (never from awk's command line, whose `-v`
  would interpret backslashes). A value cannot contain NUL: shells and
  environments cannot carry it.
- The body goes to curl on stdin (`--data-binary @-`), byte for byte.
"""

from __future__ import annotations

from .literals import json_fragment, json_str, json_value, sh_quote
from .spec import ExportSpec, Ref, comment_text, identifiers

# Every variable becomes an environment variable of the script with this prefix:
# no name a user picks can then be one that sh, awk, curl, the C library or
# OpenSSL read (PATH, LD_PRELOAD, SSLKEYLOGFILE, RES_OPTIONS, GCONV_PATH, ...),
# which a deny-list could never list in full.
SH_PREFIX = "PY_"

JSON_ESCAPE_FUNCTION = r"""# Prints the value of the environment variable named $1 as the inside of a
# JSON string, so any text (quotes, backslashes, newlines, $, backticks) is
# sent exactly as given. Plain awk; no jq needed.
json_escape() {
  awk 'BEGIN {
    for (i = 1; i < 32; i++) esc[sprintf("%c", i)] = sprintf("\\u%04x", i)
    esc["\n"] = "\\n"; esc["\t"] = "\\t"; esc["\r"] = "\\r"; esc["\""] = "\\\""; esc["\\"] = "\\\\"
    s = ENVIRON[ARGV[1]]; n = length(s)
    for (i = 1; i <= n; i++) { c = substr(s, i, 1); printf "%s", ((c in esc) ? esc[c] : c) }
  }' "$1"
}"""


def shell_names(spec: ExportSpec) -> dict[str, str]:
    return identifiers([v.name for v in spec.variables], reserved=set(),
                       transform=lambda name: SH_PREFIX + name.upper())


def _header(spec: ExportSpec, names: dict[str, str], what: str, *, reference: bool = False) -> list[str]:
    lines = [
        "#!/bin/sh",
        f"# Promptyard: {comment_text(spec.title)} (version {spec.version_number}), {what}.",
        "# The API key is read from the PROMPTYARD_API_KEY environment variable:",
        "# never paste a key into this file.",
        "# Needs only a POSIX shell, awk and curl. Prints the chat.completion JSON.",
    ]
    if names:
        example = " ".join(f"{names[v.name]}='...'" for v in spec.variables[:2])
        use = ("set one to pass it; an unset one takes the saved default of the version that runs"
               if reference else "set one to override its saved default")
        lines += [f"# Variables are shell variables; {use}:",
                  f"#   {example} sh prompt.sh",
                  "# (a value cannot contain a NUL character: no shell variable can hold one)."]
    lines += [
        "set -eu",
        ': "${PROMPTYARD_API_KEY:?set PROMPTYARD_API_KEY to your Promptyard API key}"',
        f"PROMPTYARD_BASE_URL=${{PROMPTYARD_BASE_URL:-{sh_quote(spec.base_url)}}}",
    ]
    return lines


def _variable_lines(spec: ExportSpec, names: dict[str, str], *, with_defaults: bool) -> list[str]:
    lines = [""]
    for v in spec.variables:
        name = names[v.name]
        if not with_defaults:
            lines.append(f"# {name}: the variable {v.name}")
        elif v.default is None or "\0" in v.default:
            lines.append(f': "${{{name}?set {name}: the variable {v.name} has no saved default}}"')
        else:
            lines.append(f'[ -n "${{{name}+set}}" ] || {name}={sh_quote(v.default)}')
    if with_defaults:
        lines.append("export " + " ".join(names[v.name] for v in spec.variables))
    return lines


def _printf(static: str) -> str:
    return f"  printf '%s' {sh_quote(static)}"


def _curl(url_path: str) -> list[str]:
    return [
        f'}} | curl -sS "${{PROMPTYARD_BASE_URL%/}}{url_path}" \\',
        '  -H "Authorization: Bearer $PROMPTYARD_API_KEY" \\',
        "  -H 'Content-Type: application/json' \\",
        "  --data-binary @-",
        "",
    ]


def curl_inline(spec: ExportSpec) -> str:
    names = shell_names(spec)
    lines = _header(spec, names, "the saved text, model and parameters")
    if names:
        lines += _variable_lines(spec, names, with_defaults=True)
        lines += ["", JSON_ESCAPE_FUNCTION]
    # The body as static JSON pieces and variable references, in order.
    pieces: list[str | Ref] = ['{"model":' + json_str(spec.model) + ',"messages":[']
    for i, message in enumerate(spec.messages):
        pieces.append(("," if i else "") + '{"role":' + json_str(message.role) + ',"content":"')
        pieces += [part if isinstance(part, Ref) else json_fragment(part) for part in message.parts]
        pieces.append('"' + "".join(f",{json_str(k)}:{json_value(v)}" for k, v in message.extra) + "}")
    pieces.append("]" + "".join(f",{json_str(k)}:{json_value(v)}" for k, v in spec.params.items()) + "}")
    merged: list[str | Ref] = []
    for piece in pieces:
        if isinstance(piece, str) and merged and isinstance(merged[-1], str):
            merged[-1] += piece
        else:
            merged.append(piece)
    lines += ["", "{"]
    for piece in merged:
        lines.append(f"  json_escape {names[piece.name]}" if isinstance(piece, Ref) else _printf(piece))
    lines += _curl("/v1/chat/completions")
    return "\n".join(lines)


def curl_reference(spec: ExportSpec) -> str:
    names = shell_names(spec)
    ref = spec.reference
    what = (f"run by reference: whatever version the label {ref.name} points at when it runs"
            if ref.kind == "label" else "run by reference to this version id")
    lines = _header(spec, names, comment_text(what, 120), reference=True)
    if names:
        lines += _variable_lines(spec, names, with_defaults=False)
        lines += ["", JSON_ESCAPE_FUNCTION]
    lines += ["", "{", "  printf '%s' '{\"variables\":{'"]
    if names:
        lines.append("  sep=''")
        for v in spec.variables:
            name = names[v.name]
            # Only variables that are set are sent: the others take the saved
            # default of whichever version runs.
            lines += [f'  if [ -n "${{{name}+set}}" ]; then',
                      f"    export {name}",
                      f"    printf '%s' \"$sep\"{sh_quote(json_str(v.name) + ':' + chr(34))}",
                      f"    json_escape {name}",
                      "    printf '\"'",
                      "    sep=','",
                      "  fi"]
    lines.append("  printf '%s' '}}'")
    lines += _curl(ref.path)
    return "\n".join(lines)
