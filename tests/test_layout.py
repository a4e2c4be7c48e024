"""The house rules a reader relies on: no module over 400 lines outside
migrations and tests, and no import circle between the modules of one package."""

import grimp
import pytest

from tests.layout import CODE_PACKAGES, ROOT

pytestmark = pytest.mark.any_profile  # the source only

MAX_LINES = 400


def test_no_module_is_over_400_lines():
    long = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in (".venv", "tests") or "migrations" in rel.parts:
            continue
        if (lines := len(path.read_text().splitlines())) > MAX_LINES:
            long[str(rel)] = lines
    assert not long, f"split these (docs/contributing.md): {long}"


def test_no_import_circle_inside_a_package():
    graph = grimp.build_graph(*CODE_PACKAGES, include_external_packages=False)
    circles = set()
    for package in CODE_PACKAGES:
        modules = {m for m in graph.find_descendants(package) if ".migrations." not in m} | {package}
        imports = {m: graph.find_modules_directly_imported_by(m) & modules - {m} for m in modules}
        for module in modules:
            seen, todo = set(), list(imports[module])
            while todo:  # everything the module reaches inside its package
                if (m := todo.pop()) not in seen:
                    seen.add(m)
                    todo += imports[m]
            if module in seen:
                circles.add(module)
    assert not circles, f"each imports itself through others of its package: {sorted(circles)}"
