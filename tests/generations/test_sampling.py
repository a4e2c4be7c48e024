"""What the record stage logs (inference_client.generation_log): runs of saved
versions only, sampled, and shed while the usage writer is behind, each left-out
run counted; a request never waits for the log."""

import pytest

from inference_client import generation_log
from inference_client import metrics as m
from inference_client.request_params import ChatParams
from inference_client.stages.call import Call, Principal, SessionCaller
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _call(**prompt_ref) -> Call:
    user = UserFactory()
    return Call(principal=Principal.of(SessionCaller(user, "free")), model="m",
                messages=[{"role": "user", "content": "Hi"}], params=ChatParams(max_tokens=8), snapshot=None,
                use_redis=False, kind="chat", stream=False, lane="interactive", request_id="r1", created=0,
                timeout_s=5, idempotency_key=None, fingerprint=None, prompt_ref=prompt_ref, record_sink=None)


def _dropped(reason: str) -> float:
    return m.GENERATIONS_DROPPED.labels(reason)._value.get()


@pytest.fixture(autouse=True)
def _writer_caught_up():
    yield
    generation_log.set_behind(False)


def test_should_log_only_runs_of_a_saved_version_but_not_the_playground_pages():
    result = {"text": "Hello", "finish_reason": "stop", "prompt_tokens": 1, "completion_tokens": 1}
    entry = generation_log.entry(_call(version="v", variables={"a": 1}, source="run", checked=True), result)
    assert (entry["output"], entry["variables"], entry["checked"]) == ("Hello", {"a": 1}, True)
    assert generation_log.entry(_call(), result) is None
    assert generation_log.entry(_call(version="v", source="playground"), result) is None


def test_should_shed_and_count_while_the_writer_is_behind(settings):
    settings.GENERATIONS_BACKLOG_SAMPLE_RATE = 0.0
    before = _dropped("backlog")
    generation_log.set_behind(True)
    assert generation_log.entry(_call(version="v"), None) is None
    assert _dropped("backlog") == before + 1
    generation_log.set_behind(False)
    assert generation_log.entry(_call(version="v"), None)["output"] == ""


def test_should_sample_at_the_sample_rate(settings):
    settings.GENERATIONS_SAMPLE_RATE = 0.0
    before = _dropped("sampled")
    assert generation_log.entry(_call(version="v"), None) is None
    assert _dropped("sampled") == before + 1
    settings.GENERATIONS_SAMPLE_RATE = 1.0
    assert generation_log.entry(_call(version="v"), None) is not None
