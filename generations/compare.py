"""Which version a version is compared with, per label: in an A/B split it
holds, the split's first arm (the control); else the version the label pointed
at before its last move onto this one."""

from __future__ import annotations

from playground.models import Label, LabelMove, Prompt, PromptVersion

DEFAULT_LABEL = "production"


def _split_of(label: Label | None, version: PromptVersion) -> bool:
    return bool(label and label.split and any(v["version"] == str(version.pk) for v in label.split))


def version_labels(*, prompt: Prompt, version: PromptVersion) -> list[str]:
    """The labels ever moved onto the version or splitting onto it now, `production` first."""
    names = set(LabelMove.objects.filter(to_version=version).values_list("label__name", flat=True))
    names |= {label.name for label in Label.objects.filter(prompt=prompt, split__isnull=False)
              if _split_of(label, version)}
    return sorted(names, key=lambda name: (name != DEFAULT_LABEL, name))


def version_previous(*, prompt: Prompt, version: PromptVersion, label: str
                     ) -> tuple[PromptVersion | None, str]:
    """(the version to compare with, "split" or "before"); (None, "") when there is none."""
    current = Label.objects.filter(prompt=prompt, name=label).select_related("version").first()
    if _split_of(current, version) and current.version_id != version.pk:
        return current.version, "split"
    move = (LabelMove.objects.filter(label__prompt=prompt, label__name=label, to_version=version,
                                     from_version__isnull=False)
            .exclude(from_version=version).select_related("from_version").order_by("-id").first())
    return (move.from_version, "before") if move is not None else (None, "")
