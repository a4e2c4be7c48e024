"""Which models exist and which engine spec serves each: the current config
document's ``models`` (inference_protocol.config; document 0 is INFERENCE_MODELS).

A model whose entry has "versions" is served per version: ``model@version`` is
then a served name of its own (its queue gpu.<model>@<version>, its heartbeats),
whose spec is the model's, with that version's checkpoint and option overrides.
"""

from __future__ import annotations

from typing import Any

from inference_protocol import config
from inference_protocol.config_document import version_options

VERSION_SEPARATOR = "@"


class UnknownModel(LookupError):
    code = "model_not_found"


def model_names(snapshot: config.ConfigSnapshot | None = None) -> list[str]:
    return list((snapshot or config.current()).models)


def served_name(model: str, version: str) -> str:
    return f"{model}{VERSION_SEPARATOR}{version}"


def split_served(name: str) -> tuple[str, str | None]:
    """"m@v1" -> ("m", "v1"); "m" -> ("m", None)."""
    model, sep, version = name.partition(VERSION_SEPARATOR)
    return model, (version if sep else None)


def model_spec(name: str, snapshot: config.ConfigSnapshot | None = None) -> dict[str, Any]:
    """The engine spec of a model, or of ``model@version`` (the version's
    checkpoint and its option overrides added)."""
    model, version = split_served(name)
    models = (snapshot or config.current()).models
    try:
        spec = models[model]
    except KeyError:
        raise UnknownModel(
            f"The model '{model}' does not exist; available: {', '.join(sorted(models))}."
        ) from None
    versions = spec.get("versions") or {}
    spec = {k: v for k, v in spec.items() if k != "versions"}
    if version is not None:
        if version not in versions:
            raise UnknownModel(f"The model '{model}' has no version '{version}' in config document "
                               f"{(snapshot or config.current()).number}.")
        spec = {**spec, **version_options(versions[version]),
                "checkpoint": {"model": model, "version": version}}
    return spec

