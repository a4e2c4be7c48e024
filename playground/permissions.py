"""Who may do what to a prompt: sharing.access with the prompt's rules
(playground/shares.py). API views, pages, websocket consumers, export and
presign call `access_prompt` (or `request_access`, which reads the share token
from the request) and never check roles by hand."""

from __future__ import annotations

from typing import Literal

from django.db.models import QuerySet

from sharing import access
from sharing.access import ALL_VERSIONS

from .models import Prompt
from .shares import PROMPT

Need = Literal["view", "fork", "edit", "own"]


def access_prompt(*, user, prompt_id, need: Need, share_token: str | None = None, client_addr: str = "",
                  version_id=ALL_VERSIONS, for_update: bool = False) -> Prompt:
    """The prompt if `user` (or the holder of `share_token`) has `need` on it,
    for the versions named by `version_id`; else 404 (no role) or 403 (a role
    too weak). The result carries `access_role` and `pinned_version_id`."""
    return access.access(PROMPT.name, user=user, pk=prompt_id, need=need, share_token=share_token,
                         client_addr=client_addr, version_id=version_id, for_update=for_update)


def request_access(request, *, prompt_id, need: Need, version_id=ALL_VERSIONS,
                   for_update: bool = False) -> Prompt:
    """access_prompt for an HTTP request: the user, the X-Share-Token header
    and the client address come from `request`."""
    return access.request_subject(request, PROMPT.name, pk=prompt_id, need=need, version_id=version_id,
                                  for_update=for_update)


def prompts_visible_to(*, user) -> QuerySet[Prompt]:
    """Every prompt `user` may view as an account (owned or granted)."""
    return access.visible_to(PROMPT.name, user=user)


def prompts_shared_with(*, user) -> QuerySet[Prompt]:
    """Prompts others have granted to `user`, with `is_editor` telling the strongest live role."""
    return access.shared_with(PROMPT.name, user=user)
