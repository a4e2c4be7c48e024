"""The SDK is a package of its own: pip installs it from the repository, and
the installed copy imports without Django or anything of the app."""

import shutil
import subprocess
import sys

import pytest

from tests.livesubprocess import ROOT

pytestmark = pytest.mark.any_profile


def test_should_install_with_pip_from_the_repository_and_import_alone(tmp_path):
    target = tmp_path / "site"
    # A copy, so the build leaves nothing (build/, *.egg-info) in the checkout.
    source = shutil.copytree(ROOT / "sdk" / "python", tmp_path / "src",
                             ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    # --no-build-isolation: the build backend (setuptools) comes from this venv, no index needed.
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(source)], check=True, cwd=tmp_path,
                   capture_output=True, timeout=120)
    assert (target / "promptyard" / "py.typed").exists()
    code = ("import sys, promptyard; from promptyard import Promptyard, LabelNotFound; "
            "assert 'django' not in sys.modules; print(promptyard.__file__, promptyard.__version__)")
    script = f"import sys; sys.path.insert(0, {str(target)!r}); {code}"
    out = subprocess.run([sys.executable, "-I", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(str(target)) and out.stdout.split()[1] == "0.1.0"
