"""Redis or RabbitMQ going away under load: every request gets a fast 503
with a clear code (none hangs), and the path recovers by itself when the
service is back. The gateway reaches both through TCP proxies the test cuts;
the worker and everyone else keep the real servers."""

import json
import threading
import time
from urllib.parse import urlparse

import pytest
from django.conf import settings

from tests.inference_client.conftest import MODELS, chat, make_key, uvicorn_server
from tests.polling import wait_for
from tests.tcpproxy import TcpProxy

# Needs services: Redis and RabbitMQ behind TCP proxies.
pytestmark = [pytest.mark.slow, pytest.mark.needs_services]
FAST_S = 5.0  # a refusal comes well within this; the request timeout is 120 s


@pytest.fixture
def proxied(django_db_blocker, worker, transactional_db):
    redis, broker = urlparse(settings.REDIS_URL), urlparse(settings.CELERY_BROKER_URL)
    redis_proxy, broker_proxy = TcpProxy(redis.hostname, redis.port), TcpProxy(broker.hostname, broker.port)
    redis_url = f"redis://127.0.0.1:{redis_proxy.port}{redis.path}"
    credentials = broker.netloc.rsplit("@", 1)[0]
    broker_url = f"{broker.scheme}://{credentials}@127.0.0.1:{broker_proxy.port}{broker.path}"
    env = {"REDIS_URL": redis_url, "CELERY_BROKER_URL": broker_url, "CELERY_RESULT_BACKEND": redis_url,
           "INFERENCE_MODELS": json.dumps(MODELS)}
    try:
        with uvicorn_server(django_db_blocker, **env) as base:
            yield base, redis_proxy, broker_proxy
    finally:
        redis_proxy.close()
        broker_proxy.close()


class Load:
    """Client threads calling in a loop, recording (started, seconds, status, code)."""

    def __init__(self, base: str, key: str, threads: int = 6):
        self.base, self.key, self.results, self._stop = base, key, [], threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]
        for t in self._threads:
            t.start()

    def _run(self):
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                r = chat(self.base, self.key, "load", timeout=60)
                code = r.json().get("error", {}).get("code") if r.status_code != 200 else None
                status = r.status_code
            except Exception as exc:  # noqa: BLE001 (a transport error counts as a failure)
                status, code = 0, type(exc).__name__
            self.results.append((started, time.monotonic() - started, status, code))

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(90)
        return self.results


def _during(results, start, end):
    return [r for r in results if start <= r[0] < end]


@pytest.mark.parametrize("service, codes", [
    ("redis", {"cache_unavailable", "events_unavailable"}),
    ("broker", {"queue_unavailable"}),
])
def test_should_answer_fast_503s_while_a_service_is_away_and_recover_without_a_restart(proxied, service,
                                                                                        codes):
    base, redis_proxy, broker_proxy = proxied
    proxy = redis_proxy if service == "redis" else broker_proxy
    _, key = make_key("paid")
    wait_for(lambda: chat(base, key, "warm").status_code == 200, what="a first answer")
    load = Load(base, key)
    wait_for(lambda: sum(r[2] == 200 for r in load.results) >= 5, what="answers under load")
    cut_at = time.monotonic()
    proxy.cut()
    wait_for(lambda: len(_during(load.results, cut_at + 0.5, time.monotonic())) >= 6, timeout=60,
             what="requests made while the service is away")
    restored_at = time.monotonic()
    proxy.restore()
    wait_for(lambda: any(r[2] == 200 for r in _during(load.results, restored_at + 0.5, time.monotonic())),
             timeout=30, what="an answer after the service came back")
    results = load.stop()
    # Requests made and answered while the service was away.
    away = [r for r in _during(results, cut_at + 0.5, restored_at) if r[0] + r[1] < restored_at]
    assert away and all(r[2] == 503 and r[3] in codes for r in away), \
        [r for r in away if r[2] != 503 or r[3] not in codes]
    assert max(r[1] for r in away) < FAST_S
    # Nothing hung: every request of the run ended well before the request timeout.
    assert max(r[1] for r in results) < FAST_S * 2, max(r[1] for r in results)


def test_should_end_a_request_the_broker_never_read_with_a_fast_503(proxied):
    """A generation written to the broker's connection as the link breaks (the
    bytes never reach RabbitMQ) gets a retryable 503 within a second or so, not
    a wait for a worker until its timeout."""
    base, _, broker_proxy = proxied
    _, key = make_key("paid")
    wait_for(lambda: chat(base, key, "warm").status_code == 200, what="a first answer")
    broker_proxy.swallow()
    answers = []
    caller = threading.Thread(target=lambda: answers.append(chat(base, key, "never read", timeout=60)))
    started = time.monotonic()
    caller.start()
    wait_for(lambda: broker_proxy.swallowed > 0, timeout=30, what="the publish, swallowed")
    broker_proxy.cut()
    broker_proxy.restore()
    caller.join(60)
    assert answers and answers[0].status_code == 503, answers and answers[0].text
    assert answers[0].json()["error"]["code"] == "queue_unavailable"
    assert time.monotonic() - started < FAST_S
    wait_for(lambda: chat(base, key, "after").status_code == 200, timeout=30, what="an answer after")
