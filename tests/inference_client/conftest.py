"""The live stack for gateway tests: a real Celery worker (fixed-cost engine,
50 inputs / 50 ms per call) on RabbitMQ, and uvicorn serving the app against
the test database (with `batch_worker`, `manage.py batch_worker` driving its
batches: with services no server drives one), all sharing the test Redis
database with this process."""

import contextlib
import json
import os
import subprocess
import sys
import time

import httpx
import pytest
from django.conf import settings
from django.db import connection

from inference_protocol.backend import live_workers
from tests.factories import ApiKeyFactory, UserFactory
from tests.livesubprocess import ROOT, free_port, running_server
from tests.polling import wait_for

# Its own model name, so its queue (gpu.<model>) is never shared with other suites' workers.
MODEL = "gw-fixed-cost"
# SmolLM2 on llama.cpp, for what the fixed-cost engine cannot do (structured output,
# tools, logprobs...): its worker starts only for the tests that ask for `smol`.
SMOL = "gw-smollm2"
EMBED = "gw-minilm"
MODELS = {MODEL: {"engine": "fixed_cost", "max_inputs": 50, "call_s": 0.05},
          SMOL: {"engine": "llamacpp", "n_seq_max": 8, "context_window": 1024, "n_threads": 1},
          EMBED: {"engine": "llamacpp_embeddings", "n_threads": 1}}


# /metrics of the live servers (core/monitoring.py).
METRICS_TOKEN = "gateway-tests-metrics-token"
METRICS_HEADERS = {"Authorization": f"Bearer {METRICS_TOKEN}"}


# Every live server of a test process shares its Redis database, so any of their usage
# writers may store another stack's generations: all log alike (small, to reach the object
# store) and price alike (tests/generations/test_log_live.py's model too).
GENERATIONS_LIMITS = {"GENERATIONS_INLINE_MAX_CHARS": "100", "GENERATIONS_PREVIEW_CHARS": "50"}
LOGGED_PRICES = {"gen-fixed-cost": {"input": 1.0, "output": 2.0}}


def logged_prices() -> dict:
    return {**settings.INFERENCE_PRICES, **LOGGED_PRICES}


def stack_env(**extra) -> dict:
    env = dict(os.environ, INFERENCE_MODELS=json.dumps(MODELS), HEARTBEAT_INTERVAL_S="0.2",
               HEARTBEAT_TTL_S="2", LOG_LEVEL="WARNING", METRICS_TOKEN=METRICS_TOKEN,
               SEMANTIC_CACHE_EMBEDDING_MODEL=EMBED, INFERENCE_PRICES=json.dumps(logged_prices()),
               **GENERATIONS_LIMITS)
    env.update(extra)
    return env


def wait_for_worker(model: str = MODEL, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not live_workers(model):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no heartbeat for {model} within {timeout}s")
        time.sleep(0.05)


@contextlib.contextmanager
def gateway_worker(model: str, *, concurrency: int, name: str, env: dict | None = None,
                   timeout: float = 40):
    """A real Celery worker on gpu.<model>, live (heartbeating) before it is yielded."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", f"gpu.{model}", "-P", "threads",
         "-c", str(concurrency), "--prefetch-multiplier", "1", "-l", "warning",
         "-n", f"{name}-{os.getpid()}@%h"],
        cwd=ROOT, env=env or stack_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_worker(model, timeout=timeout)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def celery_worker_proc():
    with gateway_worker(MODEL, concurrency=64, name="gw-test") as proc:
        yield proc


@pytest.fixture(scope="session")
def smol_worker_proc(celery_worker_proc):
    with gateway_worker(SMOL, concurrency=16, name="gw-smol", timeout=60) as proc:
        yield proc


@pytest.fixture(scope="session")
def embed_worker_proc(celery_worker_proc):
    with gateway_worker(EMBED, concurrency=16, name="gw-embed", timeout=90) as proc:
        yield proc


@pytest.fixture
def embedder(live, embed_worker_proc):
    """The live server, with an all-MiniLM-L6-v2 worker too (model name EMBED)."""
    wait_for_worker(EMBED)
    return live


@pytest.fixture
def smol(live, smol_worker_proc):
    """The live server, with a SmolLM2 worker too (model name SMOL)."""
    wait_for_worker(SMOL)
    return live


@pytest.fixture
def settings_models(settings):
    settings.INFERENCE_MODELS = MODELS
    return settings


@pytest.fixture
def worker(celery_worker_proc, _clean_cache, settings_models):
    """A live worker whose heartbeat is back after the per-test Redis flush."""
    wait_for_worker()
    return celery_worker_proc


@contextlib.contextmanager
def uvicorn_server(django_db_blocker, **env):
    """uvicorn on the test database (tests using it need transactional_db)."""
    url = database_url(django_db_blocker)
    port = free_port()
    args = ["-m", "uvicorn", "config.asgi:application", "--port", str(port), "--lifespan", "off",
            "--log-level", "warning"]
    with running_server(args, stack_env(DATABASE_URL=url, **env), port) as server:
        yield server.base


def database_url(django_db_blocker) -> str:
    """The test database, for the live processes."""
    with django_db_blocker.unblock():
        db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


@contextlib.contextmanager
def job_worker(django_db_blocker, command: str, **env):
    """``manage.py batch_worker`` or ``eval_worker`` on the test database: with
    services the servers drive no job, these processes do."""
    proc = subprocess.Popen([sys.executable, "manage.py", command, "--poll", "0.2"], cwd=ROOT,
                            env=stack_env(DATABASE_URL=database_url(django_db_blocker), **env),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def live_server_url(django_db_setup, django_db_blocker, celery_worker_proc):
    with uvicorn_server(django_db_blocker) as base:
        yield base


@pytest.fixture
def live(live_server_url, worker, transactional_db):
    yield live_server_url
    usage_settled()


@pytest.fixture
def batch_worker(live, django_db_blocker):
    """`manage.py batch_worker` beside the live server, for the tests whose
    batches must run (only theirs: a test may hold a batch back on purpose)."""
    with job_worker(django_db_blocker, "batch_worker") as proc:
        yield proc


def usage_settled(timeout: float = 10) -> None:
    """Wait until the live server's usage writer has stored every record
    (inference_client/usage.py): its INSERTs must not race the database flush
    between tests."""
    from core.redis import get_redis
    from inference_client.admission import inflight_key
    from inference_client.usage import USAGE_STREAM

    # A request leaves the in-flight set in the script that queues its record,
    # and the writer deletes a record from the stream once it is stored.
    redis = get_redis()
    wait_for(lambda: redis.zcard(inflight_key(MODEL)) == 0 and redis.zcard(inflight_key(SMOL)) == 0
             and redis.zcard(inflight_key(EMBED)) == 0
             and redis.xlen(USAGE_STREAM) == 0,
             timeout=timeout, what="the usage writer to store every record")


def make_key(tier: str = "free"):
    user = UserFactory()
    return ApiKeyFactory.create_with_raw(user=user, tier=tier)


def chat(base: str, key: str, content: str = "hello", *, headers=None, timeout=30, **body):
    payload = {"model": MODEL, "messages": [{"role": "user", "content": content}], **body}
    return httpx.post(f"{base}/v1/chat/completions", json=payload, timeout=timeout,
                      headers={"Authorization": f"Bearer {key}", **(headers or {})})


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    # Test users are made with a password; the default hasher costs ~0.5 s here.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
