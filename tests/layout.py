"""The project's own packages, as import-linter knows them (pyproject.toml's
root_packages): the code that tests scanning the source (error codes, metrics) read."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE_PACKAGES: tuple[str, ...] = tuple(
    tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"])
