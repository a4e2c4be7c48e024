"""The resolve stage: the model a call names, in the request's config snapshot."""

from __future__ import annotations

from core.error_codes import DomainError
from inference_client.stages.call import Call
from inference_protocol import features
from inference_protocol.catalog import UnknownModel, model_spec


def resolve(call: Call) -> None:
    """Refuse a model this deployment does not serve (404), one of the other
    endpoint's kind, or one whose engine lacks a feature the call uses (400)."""
    model, params = call.model, call.params
    try:
        spec = model_spec(model, call.snapshot)
    except UnknownModel as exc:
        raise DomainError(str(exc), code="model_not_found", field="model") from None
    if (call.kind == "embed") == features.generates(spec):
        what = "generates text; use /v1/chat/completions" if call.kind == "embed" else \
            "computes embeddings only; use /v1/embeddings"
        raise DomainError(f"The model '{model}' {what}.", code="model_not_supported",
                          field="model")
    missing = features.unsupported(spec, params.features()) if params.features() else None
    if missing:
        raise DomainError(f"The model '{model}' (engine {spec.get('engine')}) does not implement "
                          f"'{missing[0]}'.", code="unsupported_parameter", field=missing[0])
