"""Which device a request goes to: the one expected to start it soonest.

Round robin (what a shared queue does: the broker hands messages to its
consumers in turn) sends a request to a device that has just begun a 200 ms
call as readily as to one about to finish; the request then waits the whole
call. From each device's state (inference_protocol.devices: the running
step's expected end, the interactive requests already waiting there, its
batch size and step time), the expected start of a new request is:

- a fixed-batch device (one call per batch) starts it at its next call
  boundary if the waiting requests leave room in that call, else one call
  per full batch later;
- a continuous-batching device starts it at its next step if a sequence slot
  is free, else (roughly) one step per missing slot later.

An idle device that holds a batch open (the scheduler's max_wait_ms) starts
a new request when that hold ends. The soonest start wins; ties go to the
device with fewer waiting. With no fresh device state the request goes to the
model's shared queue.

Holds are what spread the devices' calls in time: without them the first
requests start every device within a few milliseconds and the calls stay in
phase, so a request still waits for "the" next boundary. bench/batching.py
("routing:" lines) shows both.
"""

from __future__ import annotations

import math

from inference_protocol.devices import DeviceState


def expected_start(state: DeviceState, now: float) -> float:
    boundary = max(now, state.busy_until)
    if boundary == now and not state.waiting and not state.running:
        boundary += state.hold_s  # idle: it would hold a new request's batch open
    if state.fixed_batch:
        return boundary + (state.waiting // state.max_batch_size) * state.step_s
    missing = state.running + state.waiting + 1 - state.max_batch_size
    return boundary + max(0, math.ceil(missing)) * state.step_s


def choose(states: list[DeviceState], now: float) -> DeviceState | None:
    if not states:
        return None
    return min(states, key=lambda s: (expected_start(s, now), s.waiting, s.device))
