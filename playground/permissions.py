"""The one place that decides who may do what to a prompt.

Views and services call `access_prompt` and never check ownership by hand,
so sharing (grants, links) can extend it here without touching them. Anyone
who may not see a prompt gets the same 404 as for a prompt that does not
exist: a stranger learns nothing.
"""

from __future__ import annotations

from typing import Literal

from django.core.exceptions import ValidationError

from config.errors import ApiError

from .models import Prompt

Need = Literal["view", "edit", "own"]


def _not_found() -> ApiError:
    return ApiError("Prompt not found.", code="prompt_not_found", status_code=404)


def access_prompt(*, user, prompt_id, need: Need, for_update: bool = False) -> Prompt:
    """The prompt if `user` has `need` on it, else a 404 ApiError.
    Today only the owner has any access."""
    if need not in ("view", "edit", "own"):
        raise ValueError(f"unknown access level {need!r}")
    if user is None or not user.is_authenticated:
        raise _not_found()
    queryset = Prompt.objects.select_for_update() if for_update else Prompt.objects
    try:
        prompt = queryset.get(pk=prompt_id)
    except (Prompt.DoesNotExist, ValidationError, ValueError) as exc:
        raise _not_found() from exc
    if prompt.owner_id != user.pk:
        raise _not_found()
    return prompt


def prompts_visible_to(*, user):
    """Every prompt `user` may view (for lists and search)."""
    if user is None or not user.is_authenticated:
        return Prompt.objects.none()
    return Prompt.objects.filter(owner=user)
