"""The capacity controller, driven by synthetic heartbeats (the real keys and TTLs)."""

import time

import pytest

from core.redis import get_redis
from inference_client import admission, capacity
from inference_protocol import heartbeat
from tests.inference_client.conftest import MODELS

# No real worker serves this model: only the synthetic heartbeats below count.
MODEL = "gw-synthetic"

# Needs services: the capacity controller reads and writes Redis.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_services]


def _beat(workers: list[str]) -> None:
    heartbeat.publish([{"worker": w, "model": MODEL, "at": time.time(), "free_slots": 50,
                        "max_batch_size": 50, "running": 0, "queue_length": 0, "tokens_per_s": 500.0,
                        "requests_per_s": 50.0, "busy_fraction": 0.5, "healthy": True} for w in workers])


async def _admit(tier: str, tokens: int) -> bool:
    decision = await admission.admit(
        buckets=[admission.global_bucket(model=MODEL, tier=tier, tokens=tokens)], model=MODEL,
        request_id=f"{tier}-{time.monotonic_ns()}", check_queue=False)
    return decision.allowed


async def test_should_tighten_at_once_shed_free_first_and_recover_gradually(settings, _clean_cache):
    settings.INFERENCE_MODELS = {**MODELS, MODEL: MODELS["gw-fixed-cost"]}
    settings.CAPACITY_NOMINAL_TOKENS_PER_S = 100.0  # measured 500/0.5 = 1000 tokens/s per worker wins
    settings.CAPACITY_CALM_PERIODS = 2
    workers = [f"synthetic-{i}" for i in range(4)]
    _beat(workers)
    full = capacity.tick([MODEL])[MODEL]
    assert (full["zone"], full["capacity"], full["rate"]) == ("green", 4000.0, 6000.0)

    # Half the workers stop heartbeating: their keys are gone within the TTL.
    get_redis().delete(*[f"inference:worker:{MODEL}:{w}" for w in workers[2:]])
    half = capacity.tick([MODEL])[MODEL]  # the very next period
    assert half["zone"] == "yellow" and half["rate"] == 2000.0 and half["free_share"] == 0.3

    # Free traffic may not dig into the 70% reserved for paid; paid still gets through.
    cap = 2000.0 * settings.CAPACITY_BUCKET_S
    assert await _admit("paid", int(cap * 0.35))
    assert not await _admit("free", int(cap * 0.1))
    assert await _admit("paid", int(cap * 0.35))

    _beat(workers)  # they come back
    rates, zones = [], []
    for _ in range(12):
        state = capacity.tick([MODEL])[MODEL]
        rates.append(state["rate"])
        zones.append(state["zone"])
    assert rates == sorted(rates) and rates[-1] == 6000.0
    steps = [b - a for a, b in zip([2000.0, *rates], rates, strict=False)]
    assert max(steps) <= settings.CAPACITY_RECOVERY_STEP * 6000.0 + 1e-6  # never one jump
    assert zones[0] == "yellow" and zones[-1] == "green"  # hysteresis: calm periods first
