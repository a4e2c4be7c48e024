"""A model's card: what a client needs to offer it (the playground draws its
model controls from these, so no page hard-codes a bound or a default)."""

from __future__ import annotations

from typing import Any

from inference_protocol import config, features, pricing, validation
from inference_protocol.catalog import model_names, model_spec


def model_card(name: str, snapshot: config.ConfigSnapshot | None = None) -> dict[str, Any]:
    """The optional features the model's engine implements, the sampling
    parameters it takes (with their bounds and defaults) and its price."""
    spec = model_spec(name, snapshot)
    return {"id": name, "engine": spec.get("engine"), "generates": features.generates(spec),
            "features": sorted(features.ENGINE_FEATURES.get(spec.get("engine") or "", frozenset())),
            "parameters": validation.sampling_parameters(), "price": pricing.model_price(name)}


def generating_cards() -> list[dict[str, Any]]:
    """The cards of every model that generates text, by name."""
    snapshot = config.current()
    cards = [model_card(name, snapshot) for name in sorted(model_names(snapshot))]
    return [card for card in cards if card["generates"]]
