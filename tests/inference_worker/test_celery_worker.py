"""The GPU worker for real: Celery over RabbitMQ, events and heartbeats in Redis."""

import asyncio
import os
import signal
import uuid

import pytest
from celery import current_app

from inference_client.backend import CeleryBackend
from inference_protocol.backend import live_workers
from inference_protocol.generation import GenerationRequest
from tests.inference_worker.workers import celery_worker, delete_queues
from tests.polling import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.needs_services]  # real Celery workers on RabbitMQ


@pytest.fixture
def model():
    """A fresh model (and queue) name per test: no leftovers from other runs."""
    name = f"fixed-{uuid.uuid4().hex[:8]}"
    yield name
    delete_queues([f"gpu.{name}"])


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """One worker for the tests that need no worker of their own (a worker's start
    is most of such a test's time): model role -> its model name."""
    run = uuid.uuid4().hex[:8]
    names = {role: f"{role}-{run}" for role in ("batching", "small-context", "crashing", "broken", "smol",
                                                "heap")}
    spec = {names["batching"]: {"engine": "fixed_cost", "max_inputs": 50, "call_s": 0.3},
            names["small-context"]: {"engine": "fixed_cost", "max_inputs": 50, "call_s": 0.05,
                                     "context_window": 64},
            names["crashing"]: {"engine": "tests.inference_worker.crashing_engine:CrashingEngine",
                                "call_s": 0.01},
            names["broken"]: {"engine": "transformers",
                              "model_dir": str(tmp_path_factory.mktemp("missing") / "none")},
            names["smol"]: {"engine": "llamacpp"},
            names["heap"]: {"engine": "tests.inference_worker.heap_engine:HeapEngine", "call_s": 0.01}}
    log = tmp_path_factory.mktemp("fleet") / "worker.log"
    queues = [f"gpu.{name}" for name in names.values()]
    try:
        with log.open("w") as out, celery_worker(spec, queues, name=f"fleet-{run}", stdout=out,
                                               stop_signal=signal.SIGKILL):  # its shutdown is not tested here
            yield {**names, "log": log}
    finally:
        delete_queues(queues)


def _request(model: str, text: str, **kwargs) -> GenerationRequest:
    return GenerationRequest(request_id=uuid.uuid4().hex, model=model,
                             messages=[{"role": "user", "content": text}], seed=7, **kwargs)


def _wait_live(model: str, count: int = 1):
    return wait_for(lambda: len(live_workers(model)) >= count and live_workers(model), timeout=60,
                    what=f"{count} live worker(s) for {model}")


def test_should_batch_concurrent_requests_and_stream_results_back(fleet):
    backend, model = CeleryBackend(), fleet["batching"]
    heartbeat = _wait_live(model)[0]
    assert heartbeat["max_batch_size"] == 50 and heartbeat["healthy"]
    requests = [_request(model, f"hello {i}") for i in range(20)]
    for request in requests:
        backend.submit(request)
    for i, request in enumerate(requests):
        events = list(backend.events(request.request_id, timeout_s=30))
        assert events[-1]["type"] == "done", events
        assert "".join(e["text"] for e in events[:-1]) == f"hello {i}"[::-1]
        assert events[-1]["result"]["completion_tokens"] == len(f"hello {i}")
    # 20 requests arrived within one 0.3 s device call: a handful of calls, not 20.
    stats = wait_for(lambda: [h for h in live_workers(model) if h["requests_per_s"] > 0], timeout=5)
    assert stats
    # A client that reconnects later reads the same stored result.
    again = backend.result(requests[3].request_id, timeout_s=5)
    assert again["result"]["text"] == "hello 3"[::-1]


def test_a_worker_freezes_its_start_up_heap_once_its_models_are_loaded(fleet):
    """As a serve process does (core/startup.tune_gc): a full collection of a worker's
    heap (Celery, Django, the engines) paused its scheduler and event writer ~150 ms
    (bench/overhead.py p99, with gc.callbacks timings)."""
    backend, model = CeleryBackend(), fleet["heap"]
    _wait_live(model)
    request = _request(model, "heap")
    backend.submit(request)
    frozen, threshold = map(int, backend.result(request.request_id, timeout_s=30)["result"]["text"].split())
    assert frozen > 50_000 and threshold == 10_000


def test_should_fail_only_the_bad_request_with_a_clear_error(fleet):
    backend, model = CeleryBackend(), fleet["small-context"]
    _wait_live(model)
    good, too_long = _request(model, "fine", max_tokens=16), _request(model, "x" * 100, max_tokens=16)
    backend.submit(good)
    backend.submit(too_long)
    assert backend.result(good.request_id, timeout_s=30)["result"]["text"] == "enif"
    failed = backend.result(too_long.request_id, timeout_s=30)
    assert failed["type"] == "error" and failed["code"] == "context_length_exceeded"


def _publish_together(backend: CeleryBackend, requests: list[GenerationRequest]) -> None:
    """As the gateway's event loop does with requests that reach the publish stage in one turn."""
    async def together():
        await asyncio.gather(*(backend.asubmit(request) for request in requests))
    asyncio.run(together())


def _messages_in(queue: str) -> int:
    with current_app.connection_for_write() as conn:
        return conn.default_channel.queue_declare(queue=queue, passive=True).message_count


def test_should_send_requests_published_together_as_one_message_and_run_each(model):
    backend = CeleryBackend()
    current_app.amqp.queues.select_add(f"gpu.{model}")  # declared as a worker of it would
    with current_app.connection_for_write() as conn:
        current_app.amqp.queues[f"gpu.{model}"].bind(conn.default_channel).declare()
    requests = [_request(model, f"together {i}") for i in range(5)]
    _publish_together(backend, requests)
    assert _messages_in(f"gpu.{model}") == 1
    spec = {model: {"engine": "fixed_cost", "max_inputs": 50, "call_s": 0.05}}
    with celery_worker(spec, [f"gpu.{model}"], name="together"):
        for i, request in enumerate(requests):
            done = backend.result(request.request_id, timeout_s=30)
            assert done["type"] == "done" and done["result"]["text"] == f"together {i}"[::-1]
        # Acknowledged once every request ended: nothing left to redeliver.
        wait_for(lambda: _messages_in(f"gpu.{model}") == 0, timeout=10, what="the message acknowledged")


def test_should_cancel_a_request_of_a_message_while_its_thread_waits_on_another(model):
    """One input per call: the three requests of one message run one after the other,
    and the task thread waits on the first while the third, cancelled, still queues."""
    backend = CeleryBackend()
    spec = {model: {"engine": "fixed_cost", "max_inputs": 1, "call_s": 1.0}}
    requests = [_request(model, f"in turn {i}") for i in range(3)]
    with celery_worker(spec, [f"gpu.{model}"], name="in-turn"):
        _wait_live(model)
        _publish_together(backend, requests)
        wait_for(lambda: any(h["running"] for h in live_workers(model)), timeout=30,
                 what="the first call to start")
        backend.cancel(requests[2].request_id)
        assert backend.result(requests[0].request_id, timeout_s=30)["type"] == "done"
        cancelled = backend.result(requests[2].request_id, timeout_s=30)
        assert cancelled["type"] == "error" and cancelled["code"] == "cancelled", cancelled
        assert cancelled["completion_tokens"] == 0  # it never reached the device


@pytest.mark.parametrize("together", [False, True], ids=["a message each", "one message for all"])
def test_should_redeliver_requests_of_a_killed_worker_and_complete_each_once(model, together):
    backend = CeleryBackend()
    # Slow calls so the first worker is surely holding requests when it dies.
    spec = {model: {"engine": "fixed_cost", "max_inputs": 50, "call_s": 4.0}}
    requests = [_request(model, f"survive {i}") for i in range(6)]
    with celery_worker(spec, [f"gpu.{model}"], name="doomed") as doomed:
        _wait_live(model)
        if together:
            _publish_together(backend, requests)
        else:
            for request in requests:
                backend.submit(request)
        wait_for(lambda: any(h["running"] for h in live_workers(model)), timeout=30,
                 what="the first worker to start a batch")
        with celery_worker(spec, [f"gpu.{model}"], name="rescuer"):
            _wait_live(model, count=2)
            os.kill(doomed.pid, signal.SIGKILL)
            doomed.wait()
            # The dead worker's heartbeat expires within its TTL.
            wait_for(lambda: len(live_workers(model)) == 1, timeout=10, what="the dead worker to vanish")
            for i, request in enumerate(requests):
                events = list(backend.events(request.request_id, timeout_s=60))
                assert events[-1]["type"] == "done", events
                # Exactly once from the client's view: one terminal event, the text once.
                assert "".join(e["text"] for e in events[:-1]) == f"survive {i}"[::-1]
                raw = backend.log.read(request.request_id, "0", 0)
                assert sum(e["type"] in ("done", "error") for _, e in raw) == 1


def test_should_not_advertise_a_model_the_worker_cannot_load(fleet):
    _wait_live(fleet["batching"])
    assert live_workers(fleet["broken"]) == []
    # It still serves the models it could load.
    request = _request(fleet["batching"], "ok")
    CeleryBackend().submit(request)
    assert CeleryBackend().result(request.request_id, timeout_s=30)["result"]["text"] == "ko"
    assert f"cannot load model {fleet['broken']}" in fleet["log"].read_text()


def test_should_end_with_an_error_event_whatever_the_engine_raises(fleet):
    """An engine bug (not an EngineError) while the request is admitted or inside
    the device call: the client gets a terminal engine_error event at once, not a
    timeout, and the worker keeps serving."""
    backend, model = CeleryBackend(), fleet["crashing"]
    _wait_live(model)
    for text, raised in [("crash in prepare", "KeyError"), ("crash in step", "ZeroDivisionError")]:
        request = _request(model, text)
        backend.submit(request)
        event = backend.result(request.request_id, timeout_s=30)
        assert event["type"] == "error" and event["code"] == "engine_error", event
        assert raised in event["message"]
    fine = _request(model, "abc")
    backend.submit(fine)
    assert backend.result(fine.request_id, timeout_s=30)["result"]["text"] == "cba"


def test_should_refuse_text_the_tokenizer_cannot_encode_with_a_terminal_event(fleet):
    """A lone surrogate makes llama.cpp's tokenizer raise UnicodeEncodeError: the
    worker checks messages with the gateway's own rule before the engine sees them,
    so the client gets a terminal invalid_messages event at once, not a timeout, and
    the worker keeps serving (the gateway refuses such text at the edge too)."""
    backend, smol = CeleryBackend(), fleet["smol"]
    _wait_live(smol)
    request = _request(smol, "broken \ud800 text", max_tokens=4)
    backend.submit(request)
    event = backend.result(request.request_id, timeout_s=30)
    assert event["type"] == "error" and event["code"] == "invalid_messages"
    assert "surrogate" in event["message"]
    fine = _request(smol, "Say hi.", max_tokens=4)  # the worker keeps serving
    backend.submit(fine)
    assert backend.result(fine.request_id, timeout_s=30)["type"] == "done"
