"""The README's run command on a fresh machine: no services at all."""

import re
import subprocess
import sys

import httpx
import pytest

from tests.livesubprocess import ROOT, embedded_env, free_port, running_server


def _login(base: str, username: str, password: str) -> httpx.Client:
    client = httpx.Client(base_url=base, follow_redirects=False, timeout=10)
    page = client.get("/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    response = client.post("/login/", data={"username": username, "password": password,
                                            "csrfmiddlewaretoken": token})
    assert response.status_code == 302, response.text
    return client


def test_should_serve_healthz_and_login_on_the_embedded_default(tmp_path):
    port = free_port()
    env = embedded_env(tmp_path, METRICS_TOKEN="scrape-token", ACCESS_LOG="true")
    with running_server(["manage.py", "serve", "--port", str(port)], env, port) as server:
        base = server.base
        health = httpx.get(base + "/healthz", headers={"Authorization": "Bearer scrape-token"}, timeout=10)
        assert health.status_code == 200, health.text
        parts = health.json()["parts"]
        assert parts["database"]["detail"] == "sqlite"
        assert parts["channel_layer"]["detail"] == "InMemoryChannelLayer"
        assert parts["cache"]["detail"] == "LocMemCache"
        assert parts["broker"]["detail"] == "in-process worker"
        assert parts["object_store"]["detail"] == f"local {tmp_path / 'blobs'}"

        client = _login(base, "demo", "promptyard-demo")
        page = client.get("/")
        assert "Signed in as <strong>demo</strong>" in page.text
        output = server.output()
    assert f"Promptyard is running at http://127.0.0.1:{port}/" in output
    assert '"GET /healthz HTTP/1.1" 200' in output  # ACCESS_LOG: uvicorn's line per request
    assert (tmp_path / "db.sqlite3").exists()
    # The embedded default's key is its own, random, and kept for the next start.
    assert len((tmp_path / "secret_key").read_text()) >= 50


def test_should_answer_503_naming_the_database_when_it_is_down(tmp_path):
    port = free_port()
    env = embedded_env(tmp_path, DATABASE_URL="postgres://postgres@127.0.0.1:1/nowhere", DEBUG="false",
                       SECRET_KEY="x" * 50)
    args = ["-m", "uvicorn", "config.asgi:application", "--port", str(port), "--lifespan", "off"]
    with running_server(args, env, port) as server:
        base = server.base
        health = httpx.get(base + "/healthz", timeout=10)
        assert health.status_code == 503
        assert health.json()["parts"]["database"]["status"] == "error"
        assert health.json()["parts"]["cache"]["status"] == "ok"

        # Looking up an API key needs the database.
        api = httpx.get(base + "/api/accounts/me", headers={"Authorization": "Bearer py_x"}, timeout=10)
        assert api.status_code == 503
        assert api.json()["error"]["code"] == "database_unavailable"
        assert "database" in api.json()["error"]["message"]

        page = httpx.get(base + "/settings/api-keys/", cookies={"sessionid": "a" * 32}, timeout=10)
        assert page.status_code == 503 and "database is unavailable" in page.text


def test_should_answer_with_real_smollm2_completions_on_the_embedded_default(tmp_path):
    port = free_port()
    with running_server(["manage.py", "serve", "--port", str(port)], embedded_env(tmp_path), port) as server:
        base = server.base
        client = _login(base, "demo", "promptyard-demo")
        csrf = client.cookies["csrftoken"]
        response = client.post("/v1/chat/completions", headers={"X-CSRFToken": csrf, "Origin": base},
                               json={"model": "smollm2", "max_tokens": 12, "temperature": 0,
                                     "messages": [{"role": "user", "content": "Say hello."}]},
                               timeout=120)
        assert response.status_code == 200, response.text
        body = response.json()
        text = body["choices"][0]["message"]["content"]
        assert text.strip(), body
        # Usage comes from the model's own tokenizer: the chat template adds tokens to the prompt.
        assert body["usage"]["prompt_tokens"] > len("Say hello.".split())
        assert 0 < body["usage"]["completion_tokens"] <= 12


def test_should_serve_embeddings_to_the_openai_sdk_on_the_embedded_default(tmp_path):
    import numpy as np
    import openai

    port = free_port()
    with running_server(["manage.py", "serve", "--port", str(port)], embedded_env(tmp_path), port) as server:
        base = server.base
        client = _login(base, "demo", "promptyard-demo")
        created = client.post("/api/accounts/keys", json={"name": "sdk"},
                              headers={"X-CSRFToken": client.cookies["csrftoken"], "Origin": base})
        assert created.status_code == 201, created.text
        sdk = openai.OpenAI(base_url=f"{base}/v1", api_key=created.json()["key"], max_retries=0, timeout=120)
        texts = ["A cat sat on the mat.", "A kitten rested on the rug.", "Quarterly revenue rose 4%."]
        reply = sdk.embeddings.create(model="all-minilm-l6-v2", input=texts)
        vectors = np.array([d.embedding for d in reply.data])
        assert [d.index for d in reply.data] == [0, 1, 2] and vectors.shape == (3, 384)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
        assert reply.model == "all-minilm-l6-v2" and reply.usage.prompt_tokens > len(texts)
        with pytest.raises(openai.BadRequestError) as e:
            sdk.embeddings.create(model="all-minilm-l6-v2", input="word " * 300)
        assert e.value.code == "context_length_exceeded"


def _production_env(tmp_path, **extra) -> dict:
    """A deployment's environment: not the embedded default, no DEBUG, no SECURE_HTTPS override."""
    env = embedded_env(tmp_path)
    for name in ("PROMPTYARD_EMBEDDED", "SECURE_HTTPS"):
        env.pop(name, None)
    return {**env, **extra}


def _manage(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.any_profile
def test_should_refuse_to_serve_without_secret_key_outside_the_embedded_default(tmp_path):
    env = _production_env(tmp_path)
    result = _manage(env, "serve", "--port", str(free_port()))
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr
    # The ASGI app itself (uvicorn, daphne) refuses too.
    imported = subprocess.run([sys.executable, "-c", "import config.asgi"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60)
    assert imported.returncode != 0 and "SECRET_KEY is not set" in imported.stderr
    # DEBUG is off unless asked for, and no key is made up.
    shown = subprocess.run([sys.executable, "-c", "from config.settings import base as s; "
                            "print(s.DEBUG, repr(s.SECRET_KEY))"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert shown.stdout.split() == ["False", "''"], shown.stderr


@pytest.mark.any_profile
def test_should_pass_check_deploy_with_production_variables(tmp_path):
    env = _production_env(tmp_path, SECRET_KEY="k" * 20 + "-production-like-" + "q" * 30,
                          ALLOWED_HOSTS="promptyard.example", SECURE_HSTS_PRELOAD="true",
                          SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto,https")
    result = _manage(env, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.any_profile
def test_should_not_create_the_demo_user_outside_the_embedded_default(tmp_path):
    port = free_port()
    env = _production_env(tmp_path, SECRET_KEY="x" * 50, SECURE_HTTPS="false")
    with running_server(["manage.py", "serve", "--port", str(port)], env, port) as server:
        client = httpx.Client(base_url=server.base, follow_redirects=False, timeout=10)
        page = client.get("/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        response = client.post("/login/", data={"username": "demo", "password": "promptyard-demo",
                                                "csrfmiddlewaretoken": token})
        assert response.status_code == 200  # the form again, with its error: no such user
        # DEBUG is off: a missing page shows no URLconf or traceback.
        missing = client.get("/no-such-page/")
        assert missing.status_code == 404 and "URLconf" not in missing.text
        output = server.output()
    assert "promptyard-demo" not in output
    assert "GET /login/" not in output  # no access log unless ACCESS_LOG is set


@pytest.mark.any_profile
def test_a_serving_process_freezes_its_start_up_heap(tmp_path):
    """The ASGI app, once built, leaves start-up's objects out of every collection and
    collects the youngest generation every GC_GEN0_THRESHOLD allocations (core/startup.py)."""
    env = _production_env(tmp_path, SECRET_KEY="k" * 50, GC_GEN0_THRESHOLD="12345")
    shown = subprocess.run([sys.executable, "-c", "import gc, config.asgi; "
                            "print(gc.get_freeze_count(), gc.get_threshold()[0])"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    frozen, threshold = map(int, shown.stdout.split())
    assert frozen > 50_000 and threshold == 12345, shown.stderr
