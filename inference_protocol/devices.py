"""Device states: when a new request would start on each device of a model,
written by workers as their queues change and read by the gateway to send
each request where it starts soonest (inference_client/routing.py).

One Redis hash per model, ``devices:<model>``: field = device (worker id),
value = a DeviceState as JSON. A state carries its own write time; readers
ignore states older than STALE_S (a dead worker's entry goes stale), and live
workers delete those older than PRUNE_AFTER_S: admission returns the whole hash
on every request, which grew by a field with every worker restart.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from redis import Redis
    from redis.client import Pipeline

    from core.redis import PipelineWriter

logger = logging.getLogger(__name__)

# Workers publish a state as their queues change and again every heartbeat
# (HEARTBEAT_INTERVAL_S, 1 s by default: it must stay below this).
STALE_S = 2.0
# Far beyond STALE_S: the margin covers the clocks of other hosts.
PRUNE_AFTER_S = 60.0


def devices_key(model: str) -> str:
    return f"devices:{model}"


@dataclasses.dataclass(frozen=True)
class DeviceState:
    device: str              # the worker id; its own queue is queues.device_queue(model, device)
    at: float                # wall-clock time of this state
    busy_until: float        # the next step's earliest start: the running step's expected
                             # end, or the end of an idle device's batch hold (<= at: idle)
    waiting: int             # interactive requests queued ahead of a new one
    running: int
    max_batch_size: int
    step_s: float            # recent step duration
    fixed_batch: bool
    hold_s: float = 0.0      # an idle device holds a new batch open this long (max_wait_ms)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, raw: str | bytes) -> DeviceState:
        return cls(**json.loads(raw))


def publish_state(writer: PipelineWriter, model: str, device: str,
                  state_of: Callable[[], DeviceState]) -> None:
    """Queue a device's state on a core.redis.PipelineWriter. ``state_of()`` makes it
    when the write is sent (only the newest pending one per device is): a scheduler
    about to start a step, where the state changes, spends no time on it (0.1 ms of
    the one-connection overhead, bench/overhead.py)."""
    key = devices_key(model)

    def add(pipe: Pipeline) -> None:
        try:
            raw = state_of().to_json()
        except Exception:  # the writes sent beside it (a step's events) must still go
            logger.exception("the state of device %s could not be read", device)
            return
        pipe.hset(key, device, raw)
        pipe.expire(key, 3600)
    writer.put_latest(f"{model}:{device}", add)


def prune_states(redis: Redis, model: str, now: float) -> list[str]:
    """Delete the states of ``model``'s devices older than PRUNE_AFTER_S; returns those devices."""
    key = devices_key(model)
    states = cast(dict[bytes, bytes], redis.hgetall(key))  # a sync client's reply
    dead = [field for field, raw in states.items()
            if now - DeviceState.from_json(raw).at > PRUNE_AFTER_S]
    if dead:
        redis.hdel(key, *dead)  # type: ignore[arg-type]  # stub: not only str
    return [field.decode() for field in dead]


def parse_states(flat: list[bytes], now: float) -> list[DeviceState]:
    """HGETALL's flat [field, value, ...] reply -> the fresh states."""
    states = [DeviceState.from_json(raw) for raw in flat[1::2]]
    return [s for s in states if now - s.at <= STALE_S]
