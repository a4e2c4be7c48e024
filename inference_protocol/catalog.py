"""Which models exist and which engine spec serves each: the current config
document's ``models`` (inference_protocol.config; document 0 is INFERENCE_MODELS)."""

from __future__ import annotations

from inference_protocol import config


class UnknownModel(LookupError):
    code = "model_not_found"


def model_names(snapshot: config.ConfigSnapshot | None = None) -> list[str]:
    return list((snapshot or config.current()).models)


def model_spec(model: str, snapshot: config.ConfigSnapshot | None = None) -> dict:
    """The engine spec of ``model`` (without its "versions" weights)."""
    models = (snapshot or config.current()).models
    try:
        spec = models[model]
    except KeyError:
        raise UnknownModel(
            f"The model '{model}' does not exist; available: {', '.join(sorted(models))}."
        ) from None
    if "versions" in spec:
        spec = {k: v for k, v in spec.items() if k != "versions"}
    return spec
