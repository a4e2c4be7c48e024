"""Which models exist and which engine spec serves each (settings.INFERENCE_MODELS)."""

from __future__ import annotations

from django.conf import settings


class UnknownModel(LookupError):
    code = "model_not_found"


def model_spec(model: str) -> dict:
    try:
        return settings.INFERENCE_MODELS[model]
    except KeyError:
        raise UnknownModel(
            f"The model '{model}' does not exist; available: {', '.join(sorted(settings.INFERENCE_MODELS))}."
        ) from None
