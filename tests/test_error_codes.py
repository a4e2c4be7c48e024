"""The error vocabulary (core/error_codes.py): every code the source sends is
registered, every registered code is sent, a DomainError's status is its
code's, and docs/api.md's errors table is the registry's."""

import ast
import json
from pathlib import Path

import pytest
from django.test import RequestFactory

from core import error_codes
from core.bodylimit import too_large_body
from core.error_codes import CODES, DomainError, UnknownErrorCode
from core.errors import api_exception_handler, error_frame, json_error
from tests.layout import CODE_PACKAGES, ROOT

CODE_NAMES = {"code", "invalid_code"}
# A literal in a code position that is no error: a passed eval gate records it.
NOT_ERRORS = {"eval_passed"}


def _sources() -> dict[str, ast.Module]:
    trees = {}
    for app in CODE_PACKAGES:
        for path in sorted((ROOT / app).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if "/migrations/" not in rel:
                trees[rel] = ast.parse(path.read_text())
    return trees


def _strings(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.IfExp):
        yield from _strings(node.body)
        yield from _strings(node.orelse)


def _code_params(trees) -> dict[str, set[int]]:
    """Callable name -> the positions of its code parameter (InvalidInput's
    `kind` is one: inference_protocol names codes so)."""
    params: dict[str, set[int]] = {}
    for rel, tree in trees.items():
        names = CODE_NAMES | ({"kind"} if rel.startswith("inference_protocol") else set())
        for node in ast.walk(tree):
            fn = node
            if isinstance(node, ast.ClassDef):  # called like its __init__
                fn = next((f for f in node.body if getattr(f, "name", "") == "__init__"), None)
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            args = [a.arg for a in fn.args.args]
            skip = 1 if args[:1] in (["self"], ["cls"]) else 0
            params.setdefault(node.name, set()).update(i - skip for i, a in enumerate(args) if a in names)
    return params


def _literal_codes() -> dict[str, str]:
    """Every string literal in a code position: code=/invalid_code= arguments,
    arguments in a code parameter's place, defaults of code parameters,
    `code = "..."` and {"code": "..."}; code -> where it first appears."""
    trees = _sources()
    params = _code_params(trees)
    found: dict[str, str] = {}
    for rel, tree in trees.items():
        kinds = CODE_NAMES | ({"kind"} if rel.startswith("inference_protocol") else set())
        for node in ast.walk(tree):
            hits = []
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                hits += [kw.value for kw in node.keywords if kw.arg in kinds]
                hits += [a for i, a in enumerate(node.args) if i in params.get(name, ())]
            elif isinstance(node, ast.Dict):
                hits += [v for k, v in zip(node.keys, node.values, strict=True)
                         if isinstance(k, ast.Constant) and k.value == "code"]
            elif isinstance(node, ast.Assign):
                hits += [node.value] if any(getattr(t, "id", None) == "code" for t in node.targets) else []
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                a = node.args
                hits += [d for p, d in zip(a.args[len(a.args) - len(a.defaults):], a.defaults, strict=True)
                         if p.arg in CODE_NAMES]
                hits += [d for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
                         if p.arg in CODE_NAMES and d is not None]
            for hit in hits:
                for code in _strings(hit):
                    found.setdefault(code, f"{rel}:{hit.lineno}")
    return found


def test_every_code_in_the_source_is_registered():
    unregistered = {code: where for code, where in _literal_codes().items()
                    if code not in CODES and code not in NOT_ERRORS}
    assert not unregistered, f"add these to core/error_codes.py CODES: {unregistered}"


def test_every_registered_code_is_sent_somewhere():
    from tests.test_drf_codes import drf_codes  # codes DRF itself sends (the handler passes them on)

    dead = set(CODES) - set(_literal_codes()) - drf_codes()
    assert not dead, f"registered but never sent (remove them from CODES): {sorted(dead)}"


def test_an_unregistered_code_fails_when_the_error_is_made():
    with pytest.raises(UnknownErrorCode, match="no_such_code"):
        DomainError("boom", code="no_such_code")
    with pytest.raises(UnknownErrorCode):
        json_error("no_such_code", "boom")


def test_the_status_is_the_codes_and_the_default_message_is_the_registrys():
    error = DomainError(code="url_expired")
    assert (error.status, error.message) == (403, "This URL has expired.")
    assert str(error) == error.message
    assert DomainError("gone", code="team_not_found").status == 404


def _modules_imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_domain_error_knows_no_http():
    imported = _modules_imported(ROOT / "core" / "error_codes.py")
    assert not {m for m in imported if m.startswith(("rest_framework", "django"))}, imported


def test_services_and_selectors_raise_domain_errors_not_drf_exceptions():
    layers = [p for app in CODE_PACKAGES for p in (ROOT / app).rglob("*.py")
              if p.stem in ("services", "selectors") and "checkpoints" not in p.parts]
    assert layers
    for path in layers:
        drf = {m for m in _modules_imported(path) if m.startswith("rest_framework")}
        assert not drf, f"{path.relative_to(ROOT)} imports {drf}"


def _refusal():
    return DomainError("Slow down.", code="rate_limit_exceeded", field="to",
                       extra={"retry_after": 2}, headers={"Retry-After": "2"})


EXPECTED = {"error": {"code": "rate_limit_exceeded", "message": "Slow down.", "field": "to",
                      "type": "rate_limit_error", "param": "to", "retry_after": 2}}


def test_drf_views_plain_views_and_websockets_map_a_domain_error_alike():
    request = RequestFactory().get("/api/x")
    response = api_exception_handler(_refusal(), {"request": request})
    assert (response.status_code, response.data, response["Retry-After"]) == (429, EXPECTED, "2")

    error = _refusal()
    plain = json_error(error.code, error.message, field=error.field, headers=error.headers, **error.extra)
    assert (plain.status_code, json.loads(plain.content), plain["Retry-After"]) == (429, EXPECTED, "2")

    frame = error_frame(_refusal(), ref="m1")
    assert frame == {"type": "error", "code": "rate_limit_exceeded", "message": "Slow down.", "field": "to",
                     "retry_after": 2, "ref": "m1"}


def test_the_body_limit_sends_the_registrys_shape():
    body = json.loads(too_large_body("REQUEST_MAX_BYTES", 10))["error"]
    assert (body["code"], body["type"]) == ("request_too_large", "invalid_request_error")
    assert (body["limit"], body["max_bytes"]) == ("REQUEST_MAX_BYTES", 10)


def test_docs_errors_table_is_current():
    text = error_codes.DOCS.read_text()
    assert error_codes.TABLE_START in text, "docs/api.md lacks the errors table markers"
    assert text == error_codes.docs_with_table(text), \
        "docs/api.md's errors table is stale: run `python -m core.error_codes`"


def test_an_unknown_engine_code_still_renders():
    from inference_client.rendering import error_status

    assert error_status({"code": "from_a_newer_worker", "message": "x"})[0] == 502
    assert error_status({"code": "queue_full", "message": "x"})[0] == 429
