"""The capacity controller: worker heartbeats + queue depth -> global rate per model.

Run lazily: the admission script hands the controller's tick to at most one
request per period (across all gateway processes); that request runs `tick()`
off its event loop. State lives in Redis (`ctl:<model>`), and the results go
into the model's global bucket hash, where the admission script reads them.

Per model, each period:
- capacity = sum over live healthy workers of the nominal tokens/s, or
  tokens_per_s / busy_fraction (throughput if the device were always busy)
  where that is higher;
- ratio = capacity / reference (the recent peak, slowly forgotten);
- queue = requests waiting (in the schedulers, plus in flight beyond the live
  batch slots) per batch slot;
- thresholds: the current config document's "capacity" section (CAPACITY_* in document 0);
- zone: red if no worker, ratio < red or queue > red; yellow if ratio < yellow
  or queue > yellow; else green. Worse zones apply at once; a better zone only
  after CAPACITY_CALM_PERIODS periods clearly inside it, one step at a time;
- targets: rate = capacity x headroom(zone), free share = share(zone); a target
  below the current value applies at once, one above is approached by at most
  CAPACITY_RECOVERY_STEP x target per period.
"""

from __future__ import annotations

import json
import time
from typing import cast

from core.redis import get_redis
from inference_client.admission import global_key, inflight_key
from inference_protocol import config
from inference_protocol.backend import live_workers
from inference_protocol.catalog import split_served

ZONES = ("green", "yellow", "red")


def state_key(model: str) -> str:
    return f"ctl:{model}"


def worker_capacity(record: dict, c: dict | None = None) -> float:
    """Tokens/s the worker could serve. Measured throughput only raises the
    nominal figure: a device running small batches (short outputs, light
    load) shows far less than it can do, and reading that as lost capacity
    would shed traffic from an idle pool. Lost workers lower the sum."""
    c = c or config.current().capacity
    busy = float(record.get("busy_fraction") or 0.0)
    measured = float(record.get("tokens_per_s") or 0.0) / busy \
        if busy >= c["min_busy_fraction"] else 0.0
    return max(c["nominal_tokens_per_s"], measured)


def worker_request_rate(record: dict, c: dict | None = None) -> float:
    c = c or config.current().capacity
    busy = float(record.get("busy_fraction") or 0.0)
    if busy >= c["min_busy_fraction"]:
        return float(record.get("requests_per_s") or 0.0) / busy
    return float(record.get("max_batch_size") or 1)  # at least a batch a second


def _signal(ratio: float, queue: float, workers: int, c: dict, *, calm: bool) -> int:
    """0 green, 1 yellow, 2 red. With calm=True, the stricter exit thresholds."""
    margin = c["ratio_margin"] if calm else 0.0
    q_scale = 0.5 if calm else 1.0
    if workers == 0 or ratio < c["red_ratio"] + margin or queue > c["red_queue"] * q_scale:
        return 2
    if ratio < c["yellow_ratio"] + margin or queue > c["yellow_queue"] * q_scale:
        return 1
    return 0


def _approach(current: float, target: float, step: float) -> float:
    if target <= current:
        return target  # tighten at once
    return min(target, current + step * target)


def step_model(model: str, workers: list[dict], inflight: int, previous: dict | None,
               thresholds: dict | None = None) -> dict:
    """One controller period for one model: pure, so tests can drive it.
    ``thresholds``: the config document's "capacity" section (default: the current one)."""
    c = thresholds or config.current().capacity
    healthy = [w for w in workers if w.get("healthy", True)]
    capacity = sum(worker_capacity(w, c) for w in healthy)
    slots = sum(int(w.get("max_batch_size") or 0) for w in healthy)
    queued = sum(int(w.get("queue_length") or 0) for w in healthy) + max(0, inflight - slots)
    queue = queued / max(slots, 1)
    prev = previous or {}
    decay = 1 - c["reference_decay"]
    reference = max(capacity, float(prev.get("reference", capacity)) * decay)
    ratio = capacity / reference if reference > 0 else 0.0

    zone = ZONES.index(prev.get("zone", "green"))
    calm = int(prev.get("calm", 0))
    now_signal = _signal(ratio, queue, len(healthy), c, calm=False)
    if now_signal >= zone:
        zone, calm = now_signal, 0  # worse (or same): at once
    elif _signal(ratio, queue, len(healthy), c, calm=True) < zone:
        calm += 1
        if calm >= c["calm_periods"]:
            zone, calm = zone - 1, 0  # one zone at a time
    else:
        calm = 0
    name = ZONES[zone]
    target_rate = capacity * c["headroom"][name]
    target_share = c["free_share"][name]
    rate = _approach(float(prev.get("rate", target_rate)), target_rate, c["recovery_step"])
    share = _approach(float(prev.get("free_share", target_share)), target_share, c["recovery_step"])
    return {"zone": name, "calm": calm, "rate": rate, "free_share": share, "capacity": capacity,
            "reference": reference, "ratio": ratio, "queue": queue, "queued": queued,
            "workers": len(healthy), "slots": slots, "inflight": inflight,
            "rps": sum(worker_request_rate(w, c) for w in healthy), "at": time.time()}


def tick(models: list[str] | None = None) -> dict[str, dict]:
    """Run one controller period for every configured model; returns the states."""
    redis = get_redis()
    snapshot = config.current()  # one document for the whole period
    c = snapshot.capacity
    models = models or list(snapshot.models)
    by_model: dict[str, list[dict]] = {m: [] for m in models}
    ready: dict[str, set[str]] = {m: set() for m in models}
    for record in live_workers():
        # model@version workers count for their model; their version is ready
        # (verified and loaded: a worker heartbeats only what it loaded)
        model, version = split_served(record["model"])
        if model in by_model:
            by_model[model].append(record)
            if version is not None and record.get("healthy", True):
                ready[model].add(version)
    pipe = redis.pipeline(transaction=False)
    for model in models:
        pipe.get(state_key(model))
        pipe.zcount(inflight_key(model), time.time() * 1000, "+inf")
    replies = pipe.execute()
    states = {}
    pipe = redis.pipeline(transaction=False)
    for i, model in enumerate(models):
        raw, inflight = replies[2 * i], int(replies[2 * i + 1])
        state = step_model(model, by_model[model], inflight, json.loads(raw) if raw else None, c)
        state["config"] = snapshot.number
        states[model] = state
        cap = max(state["rate"] * c["bucket_s"], 1.0)
        free_reserve = cap * max(c["paid_reserve"], 1.0 - state["free_share"])
        if state["free_share"] <= 0:
            free_reserve = cap + 1  # free cannot be admitted at all in this zone
        pipe.set(state_key(model), json.dumps(state), ex=3600)
        pipe.hset(global_key(model), mapping={
            "cap": cap, "rate": state["rate"], "fr": free_reserve, "workers": state["workers"],
            "slots": state["slots"], "rps": state["rps"], "zone": state["zone"],
            "ready": ",".join(sorted(ready[model]))})
        pipe.expire(global_key(model), 3600)
    pipe.execute()
    return states


def current_states() -> dict[str, dict]:
    redis = get_redis()
    models = list(config.current().models)
    raws = cast(list[bytes | None], redis.mget([state_key(m) for m in models]))  # a sync client's reply
    return {m: json.loads(r) for m, r in zip(models, raws, strict=True) if r}
