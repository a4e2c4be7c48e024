"""The resolve stage: the model a call names, in the request's config snapshot."""

from __future__ import annotations

from core.errors import ApiError
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
        raise ApiError(str(exc), code="model_not_found", status_code=404, field="model") from None
    if (call.kind == "embed") == features.generates(spec):
        what = "generates text; use /v1/chat/completions" if call.kind == "embed" else \
            "computes embeddings only; use /v1/embeddings"
        raise ApiError(f"The model '{model}' {what}.", code="model_not_supported", status_code=400,
                       field="model")
    missing = features.unsupported(spec, params.features()) if params.features() else None
    if missing:
        raise ApiError(f"The model '{model}' (engine {spec.get('engine')}) does not implement "
                       f"'{missing[0]}'.", code="unsupported_parameter", status_code=400, field=missing[0])
