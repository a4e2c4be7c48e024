"""Whether a label may change directly: a protected label moves only by its
editors, is removed only by the owner, and (require_approval) moves only by an
approved pending move (protection.py)."""

from __future__ import annotations

from core.error_codes import DomainError
from sharing.kinds import Role

from .models import Label, Prompt


def check_label_unlocked(label: Label | None, *, prompt: Prompt, action: str, approved: bool = False) -> None:
    """Raise unless `action` ("move", "undo", "redo", "split", "delete") may change
    `label` directly."""
    if label is None or not label.protected:
        return
    if action == "delete" and getattr(prompt, "access_role", Role.OWNER) != Role.OWNER:
        raise DomainError(f"Label {label.name!r} is protected: only the owner may remove it.",
                          code="label_protected", field="name")
    if label.require_approval and not approved:
        raise DomainError(f"Label {label.name!r} needs a second editor's approval to move: POST .../move "
                          "creates a pending move that another editor approves.", code="approval_required",
                          field="name")
