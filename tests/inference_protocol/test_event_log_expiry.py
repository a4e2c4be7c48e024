"""A finished generation's log is kept a minute and its result a day; a reader
that comes after the log is gone (or while it goes) is answered from the result,
each character once."""

import uuid

import pytest

from inference_client.backend import CeleryBackend
from inference_protocol.events import EVENT_TTL_S, FINISHED_LOG_TTL_S, RedisEventLog, replay
from tests.polling import wait_for


def _token(text: str, offset: int, **extra) -> dict:
    return {"type": "token", "attempt": 1, "offset": offset, "text": text, **extra}


def _done(text: str, **extra) -> dict:
    return {"type": "done", "result": {"text": text, "finish_reason": "stop", **extra}}


def _read(log: RedisEventLog, request_id: str) -> list[dict]:
    return list(CeleryBackend(log).events(request_id, timeout_s=5))


@pytest.mark.needs_services
def test_should_keep_the_result_a_day_and_the_finished_log_a_minute():
    log, rid = RedisEventLog(), uuid.uuid4().hex
    log.append(rid, _token("olleh", 0))  # sent by the log's writer thread
    wait_for(lambda: log.redis.exists(f"gen:{rid}:events"), timeout=5, what="the token")
    assert log.redis.ttl(f"gen:{rid}:events") > FINISHED_LOG_TTL_S  # running: a day
    assert log.finish(rid, _done("olleh"))
    assert 0 < log.redis.ttl(f"gen:{rid}:events") <= FINISHED_LOG_TTL_S
    assert FINISHED_LOG_TTL_S < log.redis.ttl(f"gen:{rid}:result") <= EVENT_TTL_S


@pytest.mark.needs_services
def test_should_answer_a_reader_from_the_result_once_the_log_has_gone():
    log, rid = RedisEventLog(), uuid.uuid4().hex
    log.append(rid, _token("oll", 0))
    log.append(rid, _token("eh", 3))
    done = _done("olleh")
    log.finish(rid, done)
    assert _read(log, rid) == [{"type": "token", "text": "oll"}, {"type": "token", "text": "eh"}, done]
    log.redis.delete(f"gen:{rid}:events")  # its expiry, early
    assert _read(log, rid) == [{"type": "token", "text": "olleh"}, done]


@pytest.mark.needs_services
def test_should_give_a_reader_whose_log_went_mid_way_only_the_rest():
    log, rid = RedisEventLog(), uuid.uuid4().hex
    log.append(rid, _token("ol", 0))
    backend = CeleryBackend(log)
    events = backend.events(rid, timeout_s=5)
    assert next(events) == {"type": "token", "text": "ol"}
    log.redis.delete(f"gen:{rid}:events")
    done = _done("olleh")
    log.finish(rid, done)
    log.redis.delete(f"gen:{rid}:events")  # gone before the reader's next read
    assert list(events) == [{"type": "token", "text": "leh"}, done]


def test_should_replay_each_choice_with_its_index_and_logprobs():
    logprobs = [{"token": "a", "logprob": -0.1}]
    two = _done("ba", choices=[{"index": 0, "text": "ba", "finish_reason": "stop"},
                               {"index": 1, "text": "", "finish_reason": "length"},
                               {"index": 2, "text": "dc", "finish_reason": "stop"}])
    assert replay(two) == [_token("ba", 0, index=0), _token("dc", 0, index=2), two]
    one = _done("a", logprobs=logprobs)
    assert replay(one) == [_token("a", 0, logprobs=logprobs), one]
    error = {"type": "error", "code": "cancelled", "message": "cancelled"}
    assert replay(error) == [error]


@pytest.mark.needs_services
async def test_should_answer_an_async_reader_from_the_result():
    log, rid = RedisEventLog(), uuid.uuid4().hex
    done = _done("ba", choices=[{"index": 0, "text": "ba", "finish_reason": "stop"},
                                {"index": 1, "text": "dc", "finish_reason": "stop"}])
    log.finish(rid, done)
    log.redis.delete(f"gen:{rid}:events")
    got = [e async for e in CeleryBackend(log).aevents(rid, timeout_s=5)]
    assert got == [{"type": "token", "text": "ba", "index": 0},
                   {"type": "token", "text": "dc", "index": 1}, done]


@pytest.mark.needs_services
def test_should_give_the_rest_of_the_logprobs_with_the_rest_of_the_text():
    log, rid = RedisEventLog(), uuid.uuid4().hex
    entries = [{"token": c, "logprob": -0.5} for c in "olleh"]
    log.append(rid, _token("ol", 0, logprobs=entries[:2]))
    events = CeleryBackend(log).events(rid, timeout_s=5)
    assert next(events) == {"type": "token", "text": "ol", "logprobs": entries[:2]}
    done = _done("olleh", logprobs=entries)
    log.finish(rid, done)
    log.redis.delete(f"gen:{rid}:events")
    assert list(events) == [{"type": "token", "text": "leh", "logprobs": entries[2:]}, done]


@pytest.mark.needs_services
def test_should_skip_a_late_token_in_a_log_written_again_after_it_expired():
    """A late attempt's token lands after the log has gone: the reader does not
    take it for the start; the result gives the text whole, once."""
    log, rid = RedisEventLog(), uuid.uuid4().hex
    done = _done("olleh")
    log.finish(rid, done)
    log.redis.delete(f"gen:{rid}:events")
    log.append(rid, _token("eh", 3))
    wait_for(lambda: log.redis.exists(f"gen:{rid}:events"), timeout=5, what="the late token")
    assert 0 < log.redis.ttl(f"gen:{rid}:events")
    # No reader timeout: the result must come from the fallback, not from a timeout's last look.
    assert list(CeleryBackend(log).events(rid)) == [{"type": "token", "text": "olleh"}, done]
