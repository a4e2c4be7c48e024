"""What tokens cost: INFERENCE_PRICES, USD per million tokens, per model
(a served ``model@version`` costs what its model does)."""

from __future__ import annotations

from django.conf import settings

from inference_protocol.catalog import split_served


def model_price(model: str) -> dict[str, float] | None:
    """{"input", "output"} in USD per million tokens, or None: not priced."""
    price = settings.INFERENCE_PRICES.get(split_served(model)[0])
    if not isinstance(price, dict):
        return None
    return {"input": float(price.get("input", 0.0)), "output": float(price.get("output", 0.0))}


def token_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """USD for one generation's tokens; None when the model is not priced."""
    price = model_price(model)
    if price is None:
        return None
    return (prompt_tokens * price["input"] + completion_tokens * price["output"]) / 1_000_000
