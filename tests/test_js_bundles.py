"""The pages load bundles (static/dist), each the esbuild bundle of its entry in
static/js as committed: an edit to a module without a rebuild fails here."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_committed_bundles_are_the_bundles_of_static_js():
    done = subprocess.run(["scripts/build_js.sh", "--check"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr


def test_every_page_script_is_a_bundle():
    loaded = {line for path in (ROOT / "templates").rglob("*.html")
              for line in path.read_text().splitlines() if 'type="module"' in line}
    assert loaded and all("static 'dist/" in line for line in loaded)
