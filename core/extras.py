"""Optional dependency groups ([project.optional-dependencies] in pyproject.toml)
and the error a feature gives when its group is not installed.

The embedded default installs no optional group (scripts/run.sh); a feature
that needs one names it instead of failing with a bare ImportError.
"""

from __future__ import annotations

import functools
import importlib.util


class MissingExtra(ImportError):
    def __init__(self, *, feature: str, extra: str, missing: tuple[str, ...]):
        super().__init__(
            f"{feature} needs the optional dependency group '{extra}' ({', '.join(missing)} not "
            f"installed): run scripts/install.sh --{extra}.")
        self.feature, self.extra, self.missing = feature, extra, missing


@functools.cache
def _missing(modules: tuple[str, ...]) -> tuple[str, ...]:
    # find_spec looks for the module without importing it (torch takes seconds).
    return tuple(m for m in modules if importlib.util.find_spec(m) is None)


def require_extra(*modules: str, feature: str, extra: str) -> None:
    """Raise MissingExtra unless every top-level module is importable."""
    missing = _missing(modules)
    if missing:
        raise MissingExtra(feature=feature, extra=extra, missing=missing)
