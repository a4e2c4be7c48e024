"""The scratch playground: a signed-in user runs prompts before naming one.

Its editor state is kept per user (ScratchDraft) as it is typed, its runs are
PlaygroundRuns without a prompt (playground.runs), and "Save as prompt" makes
a prompt and its first version in one transaction: both or neither.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.db import transaction

from core.error_codes import DomainError
from core.storable import storable

from .models import Prompt, PromptVersion, ScratchDraft
from .services import prompt_create, version_create


def draft_get(*, user) -> dict:
    found = ScratchDraft.objects.filter(user=user).first()
    if found is None:
        return {"state": {}, "updated_at": None}
    return {"state": found.state, "updated_at": found.updated_at.isoformat()}


def draft_put(*, user, state) -> dict:
    """Keep the editor's state as the page sends it (any JSON object up to
    PLAYGROUND_SCRATCH_MAX_BYTES): it is checked when it runs or is saved."""
    if not isinstance(state, dict):
        raise DomainError("state must be a JSON object.", code="invalid_type", field="state")
    # As typed, but for what jsonb cannot hold (NUL, a lone surrogate): autosave never fails on it.
    state = storable(state)
    size = len(json.dumps(state, ensure_ascii=False).encode("utf-8"))
    limit = settings.PLAYGROUND_SCRATCH_MAX_BYTES
    if size > limit:
        raise DomainError(f"The draft is {size} bytes; a scratch draft holds at most {limit}. Save it as a "
                          "prompt to keep a larger body.", code="body_too_large", field="state")
    ScratchDraft.objects.update_or_create(user=user, defaults={"state": state})
    return draft_get(user=user)


def draft_save_as_prompt(*, user, title: str, description: str, version: dict
                         ) -> tuple[Prompt, PromptVersion]:
    """A new prompt owned by `user` whose first version is `version`
    (version_create's fields); the scratch draft is cleared once it exists."""
    title = (title or "").strip()
    if not title or len(title) > 200:
        raise DomainError("Give the prompt a title of 1 to 200 characters.", code="invalid_name",
                          field="title")
    with transaction.atomic():
        prompt = prompt_create(owner=user, title=title, description=description or "")
        made = version_create(prompt=prompt, author=user, **version)
        ScratchDraft.objects.filter(user=user).delete()
    return prompt, made
