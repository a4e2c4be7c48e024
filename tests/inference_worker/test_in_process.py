"""The embedded default: the same scheduler and generation code, no Celery."""

import threading
import uuid

from inference_protocol.events import MemoryEventLog
from inference_protocol.generation import GenerationRequest
from inference_worker.inprocess import InProcessBackend
from inference_worker.runtime import get_scheduler
from tests.polling import wait_for


def _request(model, text, priority="free"):
    return GenerationRequest(request_id=uuid.uuid4().hex, model=model, priority=priority,
                             messages=[{"role": "user", "content": text}], max_tokens=32)


def test_should_batch_requests_on_the_in_process_worker(settings):
    model = f"inproc-{uuid.uuid4().hex[:6]}"
    settings.INFERENCE_MODELS = {model: {"engine": "fixed_cost", "max_inputs": 8, "call_s": 0.1}}
    backend = InProcessBackend(MemoryEventLog())
    requests = [_request(model, f"msg {i}") for i in range(12)]
    for request in requests:
        backend.submit(request)
    results = [backend.result(r.request_id, timeout_s=10) for r in requests]
    assert [r["result"]["text"] for r in results] == [f"msg {i}"[::-1] for i in range(12)]
    stats = get_scheduler(model).stats()
    assert stats.completed == 12 and stats.engine_calls < 12  # batched, not one call each
    assert max(stats.batch_sizes) > 1


def test_should_replay_a_finished_batch_line_without_running_it_again(settings):
    model = f"inproc-{uuid.uuid4().hex[:6]}"
    settings.INFERENCE_MODELS = {model: {"engine": "fixed_cost", "call_s": 0.01}}
    log = MemoryEventLog()
    backend = InProcessBackend(log)
    request = _request(model, "once", priority="batch")
    backend.submit(request)
    first = backend.result(request.request_id, timeout_s=10)
    backend.submit(request)  # a resumed batch resubmitting a line it had in flight
    second = backend.result(request.request_id, timeout_s=10)
    assert first == second
    stats = get_scheduler(model).stats()
    assert (stats.completed, stats.engine_calls) == (1, 1)


def test_should_stop_an_interactive_resubmission_that_has_a_result_within_a_step(settings):
    """An interactive first delivery starts before it looks for a result (the look
    is off the request's path): one found stops it, and the stored result stands."""
    model = f"inproc-{uuid.uuid4().hex[:6]}"
    settings.INFERENCE_MODELS = {model: {"engine": "fixed_cost", "call_s": 0.01}}
    log = MemoryEventLog()
    backend = InProcessBackend(log)
    request = _request(model, "once")
    backend.submit(request)
    first = backend.result(request.request_id, timeout_s=10)
    backend.submit(request)
    wait_for(lambda: get_scheduler(model).stats().cancelled == 1, what="the second run stopped")
    assert backend.result(request.request_id, timeout_s=10) == first
    assert get_scheduler(model).stats().completed == 1


def test_should_cancel_a_request_whose_client_went_away(settings):
    model = f"inproc-{uuid.uuid4().hex[:6]}"
    settings.INFERENCE_MODELS = {model: {"engine": "fixed_cost", "max_inputs": 1, "call_s": 0.5}}
    backend = InProcessBackend(MemoryEventLog())
    busy, abandoned = _request(model, "busy"), _request(model, "bye")
    backend.submit(busy)
    backend.submit(abandoned)
    threading.Timer(0.1, backend.cancel, [abandoned.request_id]).start()
    assert backend.result(busy.request_id, timeout_s=10)["type"] == "done"
    gone = backend.result(abandoned.request_id, timeout_s=10)
    assert gone["type"] == "error" and gone["code"] == "cancelled"


def test_in_process_schedulers_are_the_live_workers(settings):
    model = f"inproc-{uuid.uuid4().hex[:6]}"
    settings.INFERENCE_MODELS = {model: {"engine": "fixed_cost", "max_inputs": 5}}
    (record,) = InProcessBackend().live_workers(model)  # asking loads it, as a first request would
    assert record["max_batch_size"] == 5 and record["free_slots"] == 5


def test_should_run_n_choices_of_one_request_as_sequences_of_one_batch(settings):
    model = f"inproc-{uuid.uuid4().hex[:6]}"
    settings.INFERENCE_MODELS = {model: {"engine": "fixed_cost", "max_inputs": 8, "call_s": 0.05}}
    backend = InProcessBackend(MemoryEventLog())
    request = GenerationRequest(request_id=uuid.uuid4().hex, model=model, n=3, seed=5,
                                messages=[{"role": "user", "content": "abc"}], max_tokens=8)
    backend.submit(request)
    events = list(backend.events(request.request_id, timeout_s=10))
    assert sorted(e["index"] for e in events[:-1]) == [0, 1, 2]
    result = events[-1]["result"]
    assert [(c["index"], c["text"]) for c in result["choices"]] == [(0, "cba"), (1, "cba"), (2, "cba")]
    assert result["completion_tokens"] == 9 and result["prompt_tokens"] == 3
    assert get_scheduler(model).stats().engine_calls == 1  # the three ran in one device call
