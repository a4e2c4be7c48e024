"""The /v1 ASGI handler (core/asgi.py): Bearer calls on the generation paths skip
Django's request signals (a thread hop each way); session calls and other paths keep them."""

import json

import pytest
from channels.testing import HttpCommunicator
from django.core.signals import request_finished, request_started

from config.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def signals_seen():
    seen = []

    def started(**kwargs):
        seen.append("started")

    def finished(**kwargs):
        seen.append("finished")

    request_started.connect(started)
    request_finished.connect(finished)
    yield seen
    request_started.disconnect(started)
    request_finished.disconnect(finished)


async def call(path: str, headers: list) -> tuple[int, dict]:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    communicator = HttpCommunicator(application, "POST", path, body=body,
                                    headers=[(b"content-type", b"application/json"), *headers])
    response = await communicator.get_response(timeout=10)
    await communicator.wait(timeout=10)  # the app's own end (Django sends request_finished after the body)
    return response["status"], json.loads(response["body"])


async def test_a_bearer_generation_call_skips_the_request_signals(signals_seen):
    status, body = await call("/v1/chat/completions", [(b"authorization", b"Bearer sk-not-a-key")])
    assert (status, body["error"]["code"]) == (401, "invalid_api_key")
    assert signals_seen == []


async def test_a_session_call_keeps_them(signals_seen):
    status, body = await call("/v1/chat/completions", [])
    assert (status, body["error"]["code"]) == (401, "missing_api_key")
    assert signals_seen == ["started", "finished"]


async def test_other_api_paths_keep_them(signals_seen):
    status, _ = await call("/v1/no-such-route", [(b"authorization", b"Bearer sk-not-a-key")])
    assert status == 404
    assert signals_seen == ["started", "finished"]
