"""Each stage of the /v1 path (inference_client/stages) on its own, against the
real parts: the database, Redis where the services run, and the in-process worker
(the fixed-cost engine: its answer is the input reversed)."""

import asyncio
import time
import uuid

import pytest
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.test import RequestFactory

from core.error_codes import DomainError
from core.redis import enabled as redis_enabled
from core.redis import get_redis
from inference_client import prompt_cache
from inference_client.completion import Completion
from inference_client.stages.admit import admit
from inference_client.stages.cache import answer, lookup, replay
from inference_client.stages.call import Call, Principal, SessionCaller
from inference_client.stages.publish import publish, stream
from inference_client.stages.record import record
from inference_client.stages.request import authenticate, parse_body, parse_headers
from inference_client.stages.resolve import resolve
from inference_client.validation import check_chat_request
from inference_protocol import config
from tests.factories import ApiKeyFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)  # the stages read the database on threads

# Its own model name: no other suite's scheduler is shared.
MODEL = "stage-fixed-cost"
EMBED = "stage-minilm"
services = pytest.mark.needs_services  # Redis: idempotency keys, the prompt cache, admission


@pytest.fixture(autouse=True)
def _stage_settings(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.INFERENCE_MODELS = {**settings.INFERENCE_MODELS,
                                 MODEL: {"engine": "fixed_cost", "max_inputs": 8, "call_s": 0.005},
                                 EMBED: {"engine": "embeddings", "threads": 1}}
    settings.INFERENCE_BACKEND = "inference_worker.inprocess.InProcessBackend"
    from inference_protocol import backend

    backend.get_backend.cache_clear()
    backend.get_backend().live_workers(MODEL)  # load the worker: the capacity controller counts it
    yield settings
    backend.get_backend.cache_clear()


def make_call(content: str = "hello", *, model: str = MODEL, kind: str = "chat", record_sink=None,
              idempotency_key: str | None = None, **body) -> Call:
    chat = check_chat_request({"model": model, "messages": [{"role": "user", "content": content}], **body})
    user = UserFactory()
    return Call(principal=Principal.of(SessionCaller(user, "paid")), model=model, messages=chat.messages,
                params=chat.params, snapshot=config.current(), use_redis=redis_enabled(), kind=kind,
                stream=False, lane="interactive", request_id=uuid.uuid4().hex, created=int(time.time()),
                timeout_s=30, idempotency_key=idempotency_key, fingerprint=None, prompt_ref={},
                record_sink=record_sink)


def post(body: bytes = b"{}", **headers):
    return RequestFactory().post("/v1/chat/completions", body, content_type="application/json",
                                 headers=headers)


def code_of(excinfo) -> tuple[int, str]:
    return excinfo.value.status, excinfo.value.code


# ---- authenticate ----------------------------------------------------------------------------

async def test_authenticate_finds_the_key_of_a_bearer_call_and_refuses_a_bad_one():
    # Rows made on a thread of its own: not on asgiref's, whose connection would outlive the test.
    key, raw = await asyncio.to_thread(lambda: ApiKeyFactory.create_with_raw(user=UserFactory()))
    assert (await authenticate(post(Authorization=f"Bearer {raw}"))).pk == key.pk
    with pytest.raises(DomainError) as unknown:
        await authenticate(post(Authorization="Bearer sk-not-a-key"))
    assert code_of(unknown) == (401, "invalid_api_key")
    with pytest.raises(DomainError) as malformed:
        await authenticate(post(Authorization="Bearer two tokens"))
    assert code_of(malformed) == (401, "malformed_api_key")
    assert malformed.value.headers == {"WWW-Authenticate": "Bearer"}


async def test_authenticate_asks_a_call_without_a_key_or_session_for_one():
    request = post()
    SessionMiddleware(lambda r: None).process_request(request)
    AuthenticationMiddleware(lambda r: None).process_request(request)
    with pytest.raises(DomainError) as missing:
        await authenticate(request)
    assert code_of(missing) == (401, "missing_api_key")


# ---- parse -----------------------------------------------------------------------------------

def test_parse_checks_the_body_by_the_endpoints_rules():
    body, chat = parse_body(post(b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'),
                            check_chat_request)
    assert (body["model"], chat.messages, chat.stream) == ("m", [{"role": "user", "content": "hi"}], False)
    with pytest.raises(DomainError) as broken:
        parse_body(post(b"{not json"), check_chat_request)
    assert code_of(broken) == (400, "invalid_json")


def test_parse_reads_the_idempotency_key_and_prompt_reference_headers():
    version = str(uuid.uuid4())
    headers = parse_headers(post(**{"Idempotency-Key": "k1", "X-Prompt-Version": version}),
                            {"model": "m", "n": 1}, "chat")
    # The fingerprint is of the body and the endpoint, whatever the key order.
    assert headers.fingerprint == parse_headers(post(**{"Idempotency-Key": "k2"}), {"n": 1, "model": "m"},
                                                "chat").fingerprint
    assert headers.fingerprint != parse_headers(post(**{"Idempotency-Key": "k1"}), {"model": "m", "n": 1},
                                                "text").fingerprint
    assert (headers.idempotency_key, headers.prompt_ref) == ("k1", {"version": version, "label": "",
                                                                     "variables": {}})
    logged = parse_headers(post(**{"X-Prompt-Version": version, "X-Prompt-Variables": '{"name": "Ada"}'}),
                           {}, "chat")
    assert logged.prompt_ref["variables"] == {"name": "Ada"}
    assert parse_headers(post(), {}, "chat") == (None, None, None)
    with pytest.raises(DomainError) as too_long:
        parse_headers(post(**{"Idempotency-Key": "k" * 256}), {}, "chat")
    assert code_of(too_long) == (400, "invalid_idempotency_key")


# ---- resolve ---------------------------------------------------------------------------------

def test_resolve_refuses_an_unknown_model_and_one_of_the_other_endpoint():
    resolve(make_call())
    with pytest.raises(DomainError) as unknown:
        resolve(make_call(model="no-such-model"))
    assert code_of(unknown) == (404, "model_not_found")
    with pytest.raises(DomainError) as wrong:
        resolve(make_call(model=EMBED))
    assert code_of(wrong) == (400, "model_not_supported")


# ---- cache -----------------------------------------------------------------------------------

@services
async def test_cache_replays_an_idempotency_key_retry_and_refuses_another_body():
    first = await asyncio.to_thread(make_call, idempotency_key="retry-me")
    assert await replay(first) is None  # the first request owns the key
    retry = await asyncio.to_thread(make_call, idempotency_key="retry-me")
    retry.principal = first.principal
    attached = await replay(retry)
    assert (attached.request_id, attached.attached, attached.headers) == (
        first.request_id, True, {"Idempotent-Replayed": "true"})
    other = await asyncio.to_thread(make_call, "another body", idempotency_key="retry-me")
    other.principal = first.principal
    with pytest.raises(DomainError) as reused:
        await replay(other)
    assert code_of(reused) == (422, "idempotency_key_reused")


@services
async def test_cache_finds_a_deterministic_calls_exact_answer_of_its_tenant():
    call = await asyncio.to_thread(make_call, "cache me", temperature=0)
    await lookup(call)
    assert (call.hit, call.cache_hit) == (None, "") and call.exact_key is not None
    await prompt_cache.exact_put(call.exact_key, {"text": "em ehcac", "finish_reason": "stop"})
    again = await asyncio.to_thread(make_call, "cache me", temperature=0)
    again.principal = call.principal
    await lookup(again)
    assert (again.hit["text"], again.cache_hit) == ("em ehcac", "exact")
    sampled = await asyncio.to_thread(make_call, "cache me", temperature=0.7)
    await lookup(sampled)
    assert (sampled.hit, sampled.exact_key) == (None, None)


@services
async def test_cache_answers_a_hit_from_the_event_log_and_records_it():
    rows, recorded = [], asyncio.Event()
    call = await asyncio.to_thread(make_call, record_sink=lambda row: (rows.append(row), recorded.set()))
    call.hit, call.cache_hit = {"text": "olleh", "finish_reason": "stop", "prompt_tokens": 2,
                                "completion_tokens": 2}, "exact"
    completion = await answer(call)
    terminal = await completion.final()
    assert (terminal["type"], terminal["result"]["text"], completion.cache_hit) == ("done", "olleh", "exact")
    await recorded.wait()
    assert (rows[0]["cache_hit"], rows[0]["status"], rows[0]["request_id"]) == (
        "exact", "ok", call.request_id)


# ---- admit -----------------------------------------------------------------------------------

async def test_admit_charges_the_estimate_and_names_what_to_run():
    call = await asyncio.to_thread(make_call, "hello", max_tokens=10)
    await admit(call)
    assert call.estimate > 10 and call.served == MODEL
    if call.use_redis:
        assert call.decision.allowed
        assert call.headers["x-ratelimit-limit-requests"] == str(call.decision.buckets["requests"]["limit"])
    else:  # the embedded default has no admission
        assert (call.decision, call.headers) == (None, {})


@services
async def test_admit_refuses_past_the_tiers_request_rate(settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS,
                            "paid": {"requests_per_min": 1, "tokens_per_min": 100_000}}
    call = await asyncio.to_thread(make_call)
    await admit(call)
    again = await asyncio.to_thread(make_call)
    again.principal = call.principal
    with pytest.raises(DomainError) as refused:
        await admit(again)
    assert code_of(refused) == (429, "rate_limit_exceeded")
    assert refused.value.extra == {"reason": "requests"} and "Retry-After" in refused.value.headers


@services
async def test_admit_charges_a_cached_answer_no_tokens():
    call = await asyncio.to_thread(make_call)
    call.hit = {"text": "x"}
    await admit(call)
    assert call.estimate == 0 and call.decision.allowed and call.served == ""


# ---- publish, stream, record -----------------------------------------------------------------

async def test_publish_then_stream_brings_the_workers_answer_and_record_runs_at_its_end():
    rows, recorded = [], asyncio.Event()
    call = await asyncio.to_thread(make_call, "hello",
                                   record_sink=lambda row: (rows.append(row), recorded.set()))
    await admit(call)
    await publish(call)
    completion = stream(call)
    terminal = await completion.final()
    assert (terminal["type"], terminal["result"]["text"]) == ("done", "olleh")
    assert completion.id == f"chatcmpl-{call.request_id}" and completion.headers is call.headers
    await recorded.wait()
    assert (rows[0]["status"], rows[0]["completion_tokens"], rows[0]["tier"]) == (
        "ok", terminal["result"]["completion_tokens"], "paid")


async def test_record_keeps_a_failed_generations_usage_row():
    rows = []
    call = await asyncio.to_thread(make_call, record_sink=rows.append)
    completion = Completion(id="x", request_id=call.request_id, model=MODEL, created=call.created)
    await record(completion, call, {"type": "error", "code": "deadline_exceeded", "message": "late"})
    assert (rows[0]["status"], rows[0]["error_code"], rows[0]["prompt_tokens"]) == (
        "error", "deadline_exceeded", 0)


@services
async def test_record_fills_the_prompt_cache_with_a_finished_answer():
    call = await asyncio.to_thread(make_call, "fill", temperature=0, record_sink=lambda row: None)
    await lookup(call)
    completion = Completion(id="x", request_id=call.request_id, model=MODEL, created=call.created)
    result = {"text": "llif", "finish_reason": "stop", "prompt_tokens": 1, "completion_tokens": 1}
    await record(completion, call, {"type": "done", "result": result})
    assert await prompt_cache.exact_get(call.exact_key) == result
    assert get_redis().exists(call.exact_key)
