"""A new config document reaches the running schedulers without a restart: scheduler
settings at once, a changed engine spec by a hand-over to a new engine while the
old one finishes what it holds (inference_worker.runtime). In-process here; the
live Celery worker's version is in checkpoints/test_readiness_and_rollout.py."""

import uuid

import pytest

from inference_protocol import config
from inference_protocol.config_document import ConfigDocument
from inference_protocol.events import MemoryEventLog
from inference_protocol.generation import GenerationRequest
from inference_worker import runtime
from inference_worker.inprocess import InProcessBackend
from tests.polling import wait_for

# The same in both profiles. This process also signs (the control plane), whose
# config floor is its database of published documents.
pytestmark = [pytest.mark.any_profile, pytest.mark.django_db]

ENGINE = {"engine": "fixed_cost", "max_inputs": 4, "call_s": 0.3}


@pytest.fixture
def model(settings):
    name = f"live-{uuid.uuid4().hex[:6]}"
    # An idle device holds a partial batch until it has 4 (or a second): the first call takes 4.
    settings.INFERENCE_MODELS = {name: {**ENGINE, "scheduler": {"max_wait_ms": 1000}}}
    yield name
    with runtime._lock:
        served = runtime._served.pop(name, None)
    if served is not None:
        served.scheduler.stop()
    config.state().reset()


def publish(settings, name: str, spec: dict) -> int:
    content = config.bootstrap_content(settings)
    content["models"] = {name: spec}
    number = config.current().number + 1
    doc = ConfigDocument(number=number, parent=number - 1, content=content, created_at="t",
                                created_by="tests").signed(settings.CONFIG_SIGNING_KEY)
    assert config.state().offer(doc), config.state().last_refusal
    return number


def request(name: str, text: str) -> GenerationRequest:
    return GenerationRequest(request_id=uuid.uuid4().hex, model=name, max_tokens=32,
                             messages=[{"role": "user", "content": text}])


def test_should_hand_over_to_a_rebuilt_engine_without_losing_a_request(model, settings):
    backend = InProcessBackend(MemoryEventLog())
    old = runtime.get_scheduler(model)
    before = [request(model, f"old {i}") for i in range(6)]
    for r in before:
        backend.submit(r)
    wait_for(lambda: old.stats().running == 4, timeout=10, interval=0.01, what="the first call to start")

    number = publish(settings, model, {**ENGINE, "call_s": 0.01, "scheduler": {"max_batch_size": 2}})
    # Scheduler settings apply as the document is applied (the old scheduler too, for what it holds).
    assert old.config.max_batch_size == 2
    def successor():
        current = runtime.loaded_schedulers()[model]
        return current if current is not old else None
    new = wait_for(successor, timeout=10, interval=0.01, what="the hand-over")
    assert new.engine.call_s == 0.01 and new.config.max_batch_size == 2
    assert runtime.engine_status(model) == (number, None)

    after = [request(model, f"new {i}") for i in range(5)]
    for r in after:
        backend.submit(r)
    results = {r.request_id: backend.result(r.request_id, timeout_s=10) for r in before + after}
    assert [results[r.request_id]["result"]["text"] for r in before + after] == \
        [r.messages[0]["content"][::-1] for r in before + after]  # every one, once, no error
    # what the old engine held ran there (the running call of 4 was not disturbed, then 2 at a time)...
    assert old.engine.batch_sizes == [4, 2] and old.stats().completed == 6
    wait_for(lambda: old._thread is None, timeout=10, interval=0.01, what="the old scheduler to stop")
    # ...and everything after the hand-over ran on the new engine, at most 2 a call
    assert new.stats().completed == 5 and max(new.engine.batch_sizes) <= 2


def test_should_keep_serving_on_the_running_engine_when_a_new_spec_does_not_build(model, settings):
    backend = InProcessBackend(MemoryEventLog())
    old = runtime.get_scheduler(model)
    number = publish(settings, model, {**ENGINE, "no_such_option": 1, "scheduler": {"max_queue": 50}})
    wait_for(lambda: runtime.engine_status(model)[1], timeout=10, interval=0.01, what="the build failure")
    engine_config, error = runtime.engine_status(model)
    assert engine_config == 0 and f"config document {number}" in error and "no_such_option" in error
    assert runtime.loaded_schedulers()[model] is old and old.config.max_queue == 50
    r = request(model, "still here")
    backend.submit(r)
    assert backend.result(r.request_id, timeout_s=10)["result"]["text"] == "ereh llits"
    # a document back on the running spec clears the failure
    publish(settings, model, ENGINE)
    assert runtime.engine_status(model) == (0, None)
