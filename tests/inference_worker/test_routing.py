"""Sending each request to the device expected to start it soonest, on real
workers: device states in Redis, device queues on RabbitMQ, and a dead
device's queued requests moving to the model's shared queue."""

import dataclasses
import os
import signal
import time
import uuid
from concurrent.futures import Future

import amqp
import pytest

from core.redis import PipelineWriter, get_redis
from inference_client.backend import CeleryBackend
from inference_client.routing import choose, expected_start
from inference_protocol.devices import (
    PRUNE_AFTER_S,
    STALE_S,
    DeviceState,
    devices_key,
    parse_states,
    prune_states,
    publish_state,
)
from inference_protocol.generation import GenerationRequest
from inference_protocol.queues import DEVICE_QUEUE_REDECLARE_S, DEVICE_QUEUE_TTL_MS, device_queue
from tests.inference_worker.workers import celery_worker, delete_queues
from tests.polling import wait_for


def _state(device, busy_until=0.0, waiting=0, running=0, hold_s=0.0, max_batch=50, fixed=True):
    return DeviceState(device=device, at=100.0, busy_until=busy_until, waiting=waiting, running=running,
                       max_batch_size=max_batch, step_s=0.2, fixed_batch=fixed, hold_s=hold_s)


def test_expected_start_of_fixed_batch_and_continuous_devices():
    now = 100.0
    assert expected_start(_state("idle"), now) == now
    assert expected_start(_state("holding-idle", hold_s=0.02), now) == pytest.approx(now + 0.02)
    assert expected_start(_state("mid-call", busy_until=now + 0.15, running=10), now) == now + 0.15
    # 50 already wait for the next call: a new request goes in the one after.
    full = _state("full", busy_until=now + 0.05, waiting=50, running=50)
    assert expected_start(full, now) == pytest.approx(now + 0.25)
    continuous = _state("slots", busy_until=now + 0.01, running=3, max_batch=4, fixed=False)
    assert expected_start(continuous, now) == now + 0.01


def test_choose_prefers_the_call_about_to_end_over_the_one_just_begun():
    now = 100.0
    just_begun = _state("a", busy_until=now + 0.19, running=40)
    about_to_end = _state("b", busy_until=now + 0.01, running=40)
    assert choose([just_begun, about_to_end], now).device == "b"
    assert choose([], now) is None


@pytest.fixture
def model():
    name = f"route-{uuid.uuid4().hex[:8]}"
    yield name
    delete_queues([f"gpu.{name}"])


def _request(model, text="hi"):
    return GenerationRequest(request_id=uuid.uuid4().hex, model=model,
                             messages=[{"role": "user", "content": text}], seed=1, max_tokens=8)


def _states(model):
    flat = [x for kv in get_redis().hgetall(devices_key(model)).items() for x in kv]
    return sorted(parse_states(flat, time.time()), key=lambda s: s.device)


@pytest.mark.slow
@pytest.mark.needs_services  # real workers on RabbitMQ, device states in Redis
def test_should_send_a_request_to_the_idle_device_not_the_busy_one(model):
    backend = CeleryBackend()
    spec = {model: {"engine": "fixed_cost", "max_inputs": 1, "call_s": 1.5}}
    with celery_worker(spec, [f"gpu.{model}"], name="a"), celery_worker(spec, [f"gpu.{model}"], name="b"):
        states = wait_for(lambda: len(_states(model)) == 2 and _states(model), what="two device states")
        busy, idle = states[0].device, states[1].device
        for device in (busy, idle):  # a device knows its call time after its first call
            warm = _request(model, "warm")
            backend.submit(warm, device=device)
            backend.result(warm.request_id, timeout_s=10)
        first = _request(model, "long")
        backend.submit(first, device=busy)
        wait_for(lambda: any(s.device == busy and s.busy_until > time.time() for s in _states(model)),
                 what="the busy device's state")
        chosen = choose(_states(model), time.time())
        assert chosen.device == idle
        second = _request(model, "quick")
        backend.submit(second, device=chosen.device)
        done = backend.result(second.request_id, timeout_s=10)
        assert done["type"] == "done" and done["result"]["device"] == idle
        assert done["result"]["latency_s"] < 1.6  # it did not queue behind the long call
        assert backend.result(first.request_id, timeout_s=10)["result"]["device"] == busy


@pytest.mark.slow
@pytest.mark.needs_services  # real workers on RabbitMQ, device states in Redis
def test_should_run_a_dead_devices_queued_requests_on_another_worker(model):
    backend = CeleryBackend()
    spec = {model: {"engine": "fixed_cost", "max_inputs": 1, "call_s": 2.0}}
    with celery_worker(spec, [f"gpu.{model}"], name="doomed") as doomed:
        (state,) = wait_for(lambda: _states(model), what="a device state")
        requests = [_request(model, f"r{i}") for i in range(3)]
        for request in requests:
            backend.submit(request, device=state.device)
        wait_for(lambda: any(s.busy_until > time.time() for s in _states(model)), what="the first call")
        os.kill(doomed.pid, signal.SIGKILL)
        doomed.wait()
    with celery_worker(spec, [f"gpu.{model}"], name="heir"):
        started = time.monotonic()
        results = [backend.result(r.request_id, timeout_s=30) for r in requests]
        assert all(r["type"] == "done" for r in results), results
        assert {r["result"]["device"] for r in results} != {state.device}
        # Dead-lettered to the shared queue once they outlived the device queue's TTL.
        assert time.monotonic() - started >= DEVICE_QUEUE_TTL_MS / 1000 - 1


@pytest.mark.needs_services  # a real RabbitMQ
def test_should_declare_a_device_queue_once_per_window_not_per_publish(model):
    """An expiring queue's declaration is never cached by kombu, and cost a broker
    round trip per request: the backend declares a device queue again only when
    its last declaration is DEVICE_QUEUE_REDECLARE_S old (the queue outlives a
    declaration by DEVICE_QUEUE_EXPIRES_MS, so it is still there in between)."""
    from config.celery import app

    backend, device = CeleryBackend(), f"dev-{uuid.uuid4().hex[:6]}"
    name = device_queue(model, device).name

    def queued() -> int | None:
        with app.connection_for_write() as conn:
            try:
                return conn.channel().queue_declare(name, passive=True).message_count
            except amqp.exceptions.NotFound:
                return None

    try:
        backend.submit(_request(model), device=device)
        assert queued() == 1  # declared with the first publish
        delete_queues([name])
        backend.submit(_request(model), device=device)
        assert queued() is None  # within the window: published without a declaration
        backend._declared_at[name] -= DEVICE_QUEUE_REDECLARE_S
        backend.submit(_request(model), device=device)
        assert queued() == 1  # the window over: declared again
    finally:
        delete_queues([name])


@pytest.mark.needs_services  # Redis
def test_should_prune_dead_devices_states_and_keep_live_ones(model):
    """Admission returns a model's whole device hash on every request: the states
    of dead workers (a field per worker restart) are deleted, not only ignored."""
    redis, now = get_redis(), time.time()
    for device, age in (("dead", PRUNE_AFTER_S + 1), ("quiet", STALE_S + 1), ("live", 0.0)):
        state = dataclasses.replace(_state(device), at=now - age)
        redis.hset(devices_key(model), device, state.to_json())
    try:
        assert prune_states(redis, model, now) == ["dead"]
        # A quiet device's stale state is ignored by readers but kept: its worker may be alive.
        assert sorted(f.decode() for f in redis.hkeys(devices_key(model))) == ["live", "quiet"]
    finally:
        redis.delete(devices_key(model))


@pytest.mark.needs_services  # Redis
def test_a_device_state_is_made_as_its_write_leaves_and_one_that_fails_spares_the_rest(model):
    """A scheduler starting a step only queues its state (publish_state): the state is
    made when the write is sent, the newest pending one per device, and a state that
    cannot be made must not fail the writes sent beside it (a step's terminal events)."""
    writer, made = PipelineWriter(get_redis(), name="test-state-writer"), []

    def state_of(label):
        def make():
            made.append(label)
            return _state("a", running=len(made))
        return make

    def broken():
        raise RuntimeError("no state")

    done, key = Future(), f"{model}:beside"
    with writer.held():  # as a scheduler's step: sent at the block's end
        publish_state(writer, model, "a", state_of("first"))
        publish_state(writer, model, "a", state_of("newest"))
        publish_state(writer, model, "b", broken)
        writer.put(lambda pipe: pipe.set(key, "1", ex=60), done)
        assert made == []
    try:
        assert done.result(timeout=10) is True
        assert made == ["newest"]
        stored = get_redis().hgetall(devices_key(model))
        assert sorted(stored) == [b"a"]
        assert DeviceState.from_json(stored[b"a"]).running == 1
    finally:
        get_redis().delete(devices_key(model), key)


@pytest.mark.slow
@pytest.mark.needs_services  # a real worker, device states in Redis
def test_an_idle_devices_state_stays_fresh(model):
    """Readers drop a state older than STALE_S; an idle device's state changes only
    when a request comes, which routing never sends to a device it cannot see (a
    second device starved beside a busy first one: bench/e2e.py 1x2 at 0.47 of the
    limit). The heartbeat publishes it again, unchanged."""
    spec = {model: {"engine": "fixed_cost", "max_inputs": 1, "call_s": 0.01}}
    with celery_worker(spec, [f"gpu.{model}"], name="idle"):
        (first,) = wait_for(lambda: _states(model), what="a device state")
        # No request is sent: only the heartbeat can renew it.
        wait_for(lambda: any(s.at > first.at + STALE_S for s in _states(model)), timeout=15,
                 what="the idle device's state renewed past STALE_S")
