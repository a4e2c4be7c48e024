"""The README's run command on a fresh machine: no services at all."""

import re

import httpx

from tests.livesubprocess import embedded_env, free_port, running_server


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
    with running_server(["manage.py", "serve", "--port", str(port)], embedded_env(tmp_path), port) as server:
        base = server.base
        health = httpx.get(base + "/healthz", timeout=10)
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
    assert (tmp_path / "db.sqlite3").exists()


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
