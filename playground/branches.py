"""Branch names. A branch is a line of versions: every version carries the name
of the branch it was saved on, inherited from its parent unless the save names a
new one. Its tip is the newest version of that name nobody has edited yet; two
saves from one version on one branch leave two tips of that name (diverged),
never a refused save.
"""

from __future__ import annotations

import re

from core.error_codes import DomainError

from .models import Prompt, PromptVersion

DEFAULT_BRANCH = "main"
BRANCH_NAME_PATTERN = r"^[a-z0-9][a-z0-9._/-]{0,62}$"


def check_branch_name(name: str) -> None:
    if not re.fullmatch(BRANCH_NAME_PATTERN, name):
        raise DomainError("Branch names are 1-63 characters: lowercase letters, digits, '.', '_', '/' or "
                          "'-', starting with a letter or digit.", code="invalid_branch_name", field="branch")


def branch_for(*, prompt: Prompt, parent: PromptVersion | None, requested: str | None,
               exists_ok: bool = False) -> str:
    """The branch a new version goes on: its parent's (or main) unless `requested`
    names a new one, which must be free on this prompt (`exists_ok`: copies of a
    history that already holds the name)."""
    inherited = parent.branch if parent is not None else DEFAULT_BRANCH
    if not requested or requested == inherited:
        return inherited
    check_branch_name(requested)
    if not exists_ok and PromptVersion.objects.filter(prompt=prompt, branch=requested).exists():
        raise DomainError(f"Branch {requested!r} already exists: open its tip to save on it, or pick "
                          "another name.", code="branch_exists", field="branch")
    return requested
