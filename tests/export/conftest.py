"""Export tests: a capture server that records what exported code sends, and
the live stack (uvicorn + Celery worker + Redis + PostgreSQL) from
tests/inference_client, with this suite's own model name so its worker queue
(gpu.<model>) is never shared with another suite's worker."""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.inference_client.conftest import (
    gateway_worker,
    stack_env,
    usage_settled,
    uvicorn_server,
    wait_for_worker,
)

MODEL = "export-fixed-cost"
MODELS = {MODEL: {"engine": "fixed_cost", "max_inputs": 50, "call_s": 0.02}}
STACK = {"INFERENCE_MODELS": json.dumps(MODELS)}


class CaptureServer:
    """Records every request (path, headers, raw body) and answers with a
    valid chat.completion, so SDKs and snippets complete normally."""

    def __init__(self):
        self.requests: list[dict] = []
        captured = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                captured.append({"path": self.path, "headers": dict(self.headers), "raw": raw})
                reply = json.dumps({
                    "id": "chatcmpl-capture", "object": "chat.completion", "created": 0, "model": "m",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "captured"}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self, prefix: str) -> dict:
        """The one request whose path starts with `prefix`."""
        found = [r for r in self.requests if r["path"].startswith(prefix)]
        assert len(found) == 1, (prefix, [r["path"] for r in self.requests])
        return found[0]


@pytest.fixture(scope="session")
def capture():
    server = CaptureServer()
    yield server
    server.server.shutdown()


def clean_env(**extra) -> dict:
    """A small, explicit environment for running snippets: nothing of the
    test process leaks in as a template variable (e.g. a variable named PATH_)."""
    env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", "HOME": os.environ.get("HOME", "/tmp")}
    env.update(extra)
    return env


def run_sh(code: str, tmp_path, env: dict, shell: str = "sh") -> subprocess.CompletedProcess:
    script = tmp_path / "prompt.sh"
    script.write_text(code, encoding="utf-8")
    return subprocess.run([shell, str(script)], env=env, capture_output=True, timeout=60)


# Runs several exported Python modules in one interpreter (importing the
# openai SDK once): argv[1] is a JSON list of [file, kwargs]; prints results.
PY_RUNNER = """
import importlib.util, json, sys
out = []
for i, (path, kwargs) in enumerate(json.loads(open(sys.argv[1]).read())):
    spec = importlib.util.spec_from_file_location(f"snippet{i}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out.append(module.run_prompt(**kwargs))
print(json.dumps(out))
"""

JS_RUNNER = """
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const out = [];
for (const [path, values] of JSON.parse(readFileSync(process.argv[2], "utf8"))) {
  const module = await import(pathToFileURL(path).href);
  out.push(await module.runPrompt(values));
}
console.log(JSON.stringify(out));
"""


def run_python(jobs: list[tuple[str, dict]], tmp_path, env: dict) -> list:
    manifest = tmp_path / "py-jobs.json"
    manifest.write_text(json.dumps(jobs))
    result = subprocess.run([sys.executable, "-c", PY_RUNNER, str(manifest)], env=env, cwd=tmp_path,
                            capture_output=True, timeout=60, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def run_node(jobs: list[tuple[str, dict]], tmp_path, env: dict) -> list:
    manifest = tmp_path / "js-jobs.json"
    manifest.write_text(json.dumps(jobs))
    runner = tmp_path / "runner.mjs"
    runner.write_text(JS_RUNNER)
    result = subprocess.run(["node", str(runner), str(manifest)], env=env, capture_output=True,
                            timeout=60, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="session")
def export_worker():
    with gateway_worker(MODEL, concurrency=16, name="export-test", env=stack_env(**STACK)) as proc:
        yield proc


@pytest.fixture(scope="session")
def export_server(django_db_setup, django_db_blocker, export_worker):
    with uvicorn_server(django_db_blocker, **STACK) as base:
        yield base


@pytest.fixture
def live(export_server, export_worker, transactional_db, _clean_cache, settings):
    settings.INFERENCE_MODELS = MODELS
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    wait_for_worker(MODEL)  # its heartbeat is back after the per-test Redis flush
    yield export_server
    usage_settled()  # the server's usage writer must not race the database flush
