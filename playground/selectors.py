"""Reads: prompt lists, versions, the version tree, heads, labels."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery

from core.error_codes import DomainError
from core.ids import is_uuid

from .models import Label, LabelMove, Prompt, PromptVersion
from .permissions import prompts_visible_to


def prompt_list(*, user, search: str = "") -> QuerySet[Prompt]:
    queryset = prompts_visible_to(user=user)
    if search:
        queryset = queryset.filter(Q(title__icontains=search) | Q(description__icontains=search))
    return queryset


def version_list(*, prompt: Prompt) -> QuerySet[PromptVersion]:
    # Metadata only: payloads stay in the database until a body is asked for.
    return PromptVersion.objects.filter(prompt=prompt).defer("payload_inline")


def version_get(*, prompt: Prompt, version_id) -> PromptVersion:
    version = (PromptVersion.objects.select_related("payload_blob")
               .filter(prompt=prompt, pk=version_id).first() if is_uuid(version_id) else None)
    if version is None:
        raise DomainError(code="version_not_found", field="version")
    return version




def version_heads(*, prompt: Prompt) -> QuerySet[PromptVersion]:
    """The tip of every branch: versions nobody has edited yet."""
    children = PromptVersion.objects.filter(parent=OuterRef("pk"))
    merged_into = PromptVersion.objects.filter(merge_parent=OuterRef("pk"))
    return (version_list(prompt=prompt).filter(~Exists(children), ~Exists(merged_into))
            .order_by("-created_at", "-number"))


def version_children(*, version_ids) -> dict:
    """parent id -> [child ids] for the given versions."""
    out: dict = {vid: [] for vid in version_ids}
    rows = PromptVersion.objects.filter(parent_id__in=version_ids).order_by("number")
    for child_id, parent_id in rows.values_list("pk", "parent_id"):
        out[parent_id].append(child_id)
    return out


def version_labels(*, prompt: Prompt) -> dict:
    """version id -> [label names]."""
    out: dict = {}
    for name, version_id in Label.objects.filter(prompt=prompt).values_list("name", "version_id"):
        out.setdefault(version_id, []).append(name)
    return out


def label_list(*, prompt: Prompt) -> QuerySet[Label]:
    return Label.objects.filter(prompt=prompt)


def label_list_with_last_move(*, prompt: Prompt) -> QuerySet[Label]:
    """The labels, each with who moved it last and when (moved_by, moved_at)."""
    last = LabelMove.objects.filter(label=OuterRef("pk")).order_by("-id")
    return label_list(prompt=prompt).annotate(moved_by=Subquery(last.values("actor__username")[:1]),
                                              moved_at=Subquery(last.values("created_at")[:1]))


def label_get(*, prompt: Prompt, name: str) -> Label:
    label = Label.objects.select_related("version__payload_blob").filter(prompt=prompt, name=name).first()
    if label is None:
        raise DomainError(f"No label {name!r} on this prompt.", code="label_not_found",
                          field="name")
    return label


def label_history(*, prompt: Prompt, name: str) -> QuerySet[LabelMove]:
    return LabelMove.objects.filter(label__prompt=prompt, label__name=name).order_by("-id")


def label_split_versions(*, label: Label) -> QuerySet[PromptVersion]:
    return PromptVersion.objects.select_related("payload_blob").filter(
        prompt_id=label.prompt_id, pk__in=[v["version"] for v in label.split or ()])
