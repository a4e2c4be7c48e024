"""Who sees which generation, and the filtered lists.

A generation is seen by any account that may view its prompt (sharing.access),
while its version exists; to anyone else, and once the version is gone, it does
not exist (404 `generation_not_found`, the same as for an id never used).
"""

from __future__ import annotations

import datetime
import json

from django.db.models import QuerySet

from core.blobstore import get_blob_store
from core.error_codes import DomainError
from playground.models import Prompt, PromptVersion
from playground.permissions import access_prompt, request_access
from sharing.kinds import Role

from .models import Generation

STATUSES = ("ok", "error", "cancelled")


def generation_not_found() -> DomainError:
    return DomainError("No such generation.", code="generation_not_found")


def generation_get(*, user, generation_id) -> Generation:
    """The generation, if `user` may view its prompt and its version still exists."""
    try:
        generation = Generation.objects.filter(pk=int(generation_id)).first()
    except (TypeError, ValueError, OverflowError):
        generation = None
    if generation is None or not PromptVersion.objects.filter(pk=generation.version_id,
                                                             prompt_id=generation.prompt_id).exists():
        raise generation_not_found()
    try:
        access_prompt(user=user, prompt_id=generation.prompt_id, need="view")
    except DomainError as exc:
        if exc.status in (403, 404):  # a link pinned to one version is no view of the log
            raise generation_not_found() from None
        raise
    return generation


def generation_output(generation: Generation) -> str:
    """The whole output (from the object store when the row holds its head)."""
    if not generation.output_blob:
        return generation.output
    return get_blob_store().get(generation.output_blob).decode()


def generation_messages(generation: Generation) -> list:
    if not generation.messages_blob:
        return generation.messages or []
    return json.loads(get_blob_store().get(generation.messages_blob))


def generation_list(*, prompt: Prompt, version_id=None, label: str = "", status: str = "", model: str = "",
                    since: datetime.datetime | None = None, until: datetime.datetime | None = None,
                    search: str = "") -> QuerySet[Generation]:
    """The prompt's generations (the caller checked access to `prompt`), newest first."""
    rows = Generation.objects.filter(prompt_id=prompt.pk)
    if version_id is not None:
        rows = rows.filter(version_id=version_id)
    if label:
        rows = rows.filter(label=label)
    if status:
        rows = rows.filter(status=status)
    if model:
        rows = rows.filter(model=model)
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    if until is not None:
        rows = rows.filter(created_at__lt=until)
    if search:  # search_text is lower-cased: a plain LIKE, which the trigram index serves
        rows = rows.filter(search_text__contains=search.lower())
    return rows.defer("messages", "params", "search_text")


def prompt_for_log(request, *, prompt_id) -> Prompt:
    """The prompt whose log the request's user may read: 404 `prompt_not_found`
    without a role, 403 for a share link's holder (a link shows the prompt, not
    what others ran through it: the log is for accounts the prompt is shared with)."""
    prompt = request_access(request, prompt_id=prompt_id, need="view")
    if prompt.access_role < Role.VIEWER:
        raise DomainError("A share link does not show the generations log.", code="forbidden")
    return prompt
