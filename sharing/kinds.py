"""The kinds of object that can be shared: one entry each, registered by the app
that owns the model (playground: prompts, evals: datasets) when Django starts.

Links, grants, the audit log, the access rules (sharing.access) and the sharing
API (sharing.api, its URLs from `subject_urls`) serve every kind alike; what
differs is here, as data. Sharing another object is one `register(SubjectKind(...))`
plus its foreign key on ShareLink and Grant (the key's name is the kind's name)."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable


class Role(enum.IntEnum):
    NONE = 0
    LINK = 1
    VIEWER = 2
    EDITOR = 3
    OWNER = 4


@dataclasses.dataclass(frozen=True)
class SubjectKind:
    name: str  # the keyword (prompt=...), the foreign key on ShareLink and Grant, the URL's <name>_id
    model: type  # the shared model; it has `owner`
    not_found: Callable[[], Exception]  # the error for no role and for no such object (the same 404)
    # Each access level a caller may ask for, and the weakest role that has it.
    needs: dict[str, Role]
    read_only: str  # the 403's message for a role too weak (but the owner's)
    # The model of the subject's versions when a link may pin one (its FK to the subject is `name`).
    version_model: type | None = None
    # Levels a link holder must also be signed in for, and the message when not.
    signed_in_needs: dict[str, str] = dataclasses.field(default_factory=dict)
    # Called with (subject, event, data) after a link or grant is made or revoked (webhooks).
    changed: Callable[[object, str, dict], None] | None = None
    # The page a share link opens: (request, subject, link, token) -> response.
    link_page: Callable | None = None
    url_name: str = "api-{}"  # the sharing API's URL names: links, link, grants, grant
    # True: the sharing API answers a signed-out caller as the access check does (404 / 403,
    # as the object's other views answer its link holders); False: DRF's 401 first.
    signed_out_checked: bool = True


KINDS: dict[str, SubjectKind] = {}


def register(kind: SubjectKind) -> SubjectKind:
    KINDS[kind.name] = kind
    return kind


def subject_of(kwargs: dict) -> tuple[SubjectKind, object]:
    """The one `<kind>=<object>` of a call's keywords (link_create(prompt=p, ...))."""
    given = [(KINDS[name], value) for name, value in kwargs.items() if name in KINDS and value is not None]
    if len(given) != 1 or set(kwargs) - set(KINDS):
        raise TypeError(f"share exactly one of {', '.join(KINDS)}; got {', '.join(kwargs) or 'none'}")
    return given[0]
