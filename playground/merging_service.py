"""Merging two heads of a prompt's tree: the preview (a three-way merge of the
system text and the body against their common ancestor) and the checks of a
merge commit (a version with two parents)."""

from __future__ import annotations

from django.conf import settings

from core.error_codes import DomainError

from .bodies import body_text
from .matching import Budget
from .merging import merge3
from .models import Prompt, PromptVersion
from .selectors import version_get


def _ancestors(version: PromptVersion) -> dict:
    """id -> version for `version` and everything it descends from (both parents of merges)."""
    by_id = {v.pk: v for v in PromptVersion.objects.filter(prompt_id=version.prompt_id)
             .only("id", "parent_id", "merge_parent_id", "depth", "number")}
    seen, stack = {}, [version.pk]
    while stack:
        vid = stack.pop()
        if vid in seen or vid not in by_id:
            continue
        seen[vid] = by_id[vid]
        stack += [p for p in (by_id[vid].parent_id, by_id[vid].merge_parent_id) if p]
    return seen


def _pair(prompt: Prompt, ours_id, theirs_id) -> tuple[PromptVersion, PromptVersion]:
    if ours_id is None or theirs_id is None:
        raise DomainError("Name both versions: ours and theirs.", code="invalid_request",
                          field="ours" if ours_id is None else "theirs")
    if str(ours_id) == str(theirs_id):
        raise DomainError("A version cannot be merged with itself.", code="merge_same_version",
                          field="theirs")
    ours = version_get(prompt=prompt, version_id=ours_id)
    try:
        theirs = version_get(prompt=prompt, version_id=theirs_id)
    except DomainError:
        raise DomainError("The version to merge is not a version of this prompt: merges stay within one "
                          "prompt.", code="version_not_found", field="theirs") from None
    return ours, theirs


def common_ancestor(ours: PromptVersion, theirs: PromptVersion) -> PromptVersion:
    mine, other = _ancestors(ours), _ancestors(theirs)
    if theirs.pk in mine or ours.pk in other:
        raise DomainError("One version already contains the other: nothing to merge (move the label or "
                          "edit the newer one).", code="merge_not_needed", field="theirs")
    shared = [v for vid, v in mine.items() if vid in other]
    if not shared:  # cannot happen within one prompt tree (one root); kept as a clear error
        raise DomainError("These versions share no ancestor.", code="merge_no_common_ancestor",
                          field="theirs")
    return max(shared, key=lambda v: (v.depth, v.number))


def check_merge_parents(*, prompt: Prompt, parent: PromptVersion | None, merge_parent_id) -> PromptVersion:
    """The second parent of a merge commit, checked against the first."""
    if parent is None:
        raise DomainError("A merge names its first parent too.", code="parent_required", field="parent")
    ours, theirs = _pair(prompt, parent.pk, merge_parent_id)
    common_ancestor(ours, theirs)
    return version_get(prompt=prompt, version_id=theirs.pk)


def _merge_value(base, ours, theirs):
    """A three-way merge of one whole value: the side that changed it; (ours, True)
    when both changed it differently."""
    if ours == theirs or theirs == base:
        return ours, False
    if ours == base:
        return theirs, False
    return ours, True


def merge_preview(*, prompt: Prompt, ours_id, theirs_id) -> dict:
    ours, theirs = _pair(prompt, ours_id, theirs_id)
    base = version_get(prompt=prompt, version_id=common_ancestor(ours, theirs).pk)
    budget = Budget(settings.PROMPT_DIFF_TIMEOUT_S)
    body = merge3(body_text(base), body_text(ours), body_text(theirs), budget)
    system = merge3(base.system, ours.system, theirs.system, budget)
    variables = {**theirs.variables, **ours.variables}
    differing = sorted(k for k in set(ours.variables) & set(theirs.variables)
                       if ours.variables[k] != theirs.variables[k])
    tools, tools_differing = _merge_value(base.tools, ours.tools, theirs.tools)
    messages, messages_differing = _merge_value(base.messages, ours.messages, theirs.messages)
    return {"base": str(base.pk), "base_number": base.number,
            "ours": str(ours.pk), "ours_number": ours.number,
            "theirs": str(theirs.pk), "theirs_number": theirs.number,
            "conflicts": body["conflicts"] + system["conflicts"], "body": body, "system": system,
            "coarse": budget.coarse,
            "variables": variables, "variables_differing": differing,
            "tools": tools, "tools_differing": tools_differing,
            "messages": messages, "messages_differing": messages_differing,
            "model": ours.model_name, "message": f"Merge v{theirs.number} into v{ours.number}"}
