"""Which version a version is compared with: the one its label pointed at before
it (the last move of the label onto it), per label."""

from __future__ import annotations

from playground.models import LabelMove, Prompt, PromptVersion

DEFAULT_LABEL = "production"


def version_labels(*, version: PromptVersion) -> list[str]:
    """The labels ever moved onto the version, `production` first."""
    names = set(LabelMove.objects.filter(to_version=version).values_list("label__name", flat=True))
    return sorted(names, key=lambda name: (name != DEFAULT_LABEL, name))


def version_previous(*, prompt: Prompt, version: PromptVersion, label: str) -> PromptVersion | None:
    """The version `label` pointed at before its last move onto `version` (None: none)."""
    move = (LabelMove.objects.filter(label__prompt=prompt, label__name=label, to_version=version,
                                     from_version__isnull=False)
            .exclude(from_version=version).select_related("from_version").order_by("-id").first())
    return move.from_version if move is not None else None
