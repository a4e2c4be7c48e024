"""Browser tests: Debian's Chromium driven by Playwright against the app served
by a uvicorn subprocess (ASGI, so SSE really streams) on the test database."""

import os
from pathlib import Path

import pytest
from django.conf import settings

from tests.livesubprocess import ROOT, free_port, running_server

ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
# The fixed-cost engine on the in-process worker: deterministic output (the
# reversed input) a few milliseconds per token, no model download.
E2E_MODELS = '{"fixed-cost": {"engine": "fixed_cost", "max_inputs": 50, "call_s": 0.05, "per_token_s": 0.01}}'


def _server_env(var_dir: Path) -> dict:
    db = settings.DATABASES["default"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3_")}
    env.update(
        # The database pytest-django created and migrated for this session.
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        # No Redis and no broker: inference runs on the in-process worker, whose
        # schedulers are its live workers (with Redis, admission would wait for
        # heartbeats of a Celery worker).
        REDIS_URL="", CELERY_BROKER_URL="", CELERY_RESULT_BACKEND="",
        INFERENCE_MODELS=E2E_MODELS, DEFAULT_MODEL="fixed-cost",
        # Local blob store: presigned uploads are same-origin (no CORS to set up).
        PROMPTYARD_VAR_DIR=str(var_dir), DEBUG="false", SECRET_KEY="e2e-secret-key-not-for-production",
    )
    return env


@pytest.fixture(scope="module")
def live_url(django_db_setup, django_db_blocker, tmp_path_factory):
    port = free_port()
    args = ["-m", "uvicorn", "config.asgi:application", "--port", str(port), "--lifespan", "off"]
    with running_server(args, _server_env(tmp_path_factory.mktemp("e2e-var")), port) as server:
        yield server.base


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread, and the test's ORM
    # calls would trip Django's async guard; only while the browser is open, so
    # later tests' subprocesses (check --deploy) do not inherit the variable.
    with pytest.MonkeyPatch.context() as mp, sync_playwright() as p:
        mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        yield b
        b.close()


class ConsoleErrors(list):
    """Console errors and uncaught exceptions seen by a page; tests assert it stays empty."""

    def watch(self, page):
        page.on("console", lambda msg: msg.type == "error" and self.append(f"console: {msg.text}"))
        page.on("pageerror", lambda exc: self.append(f"pageerror: {exc}"))
        return page


@pytest.fixture
def console_errors():
    return ConsoleErrors()


@pytest.fixture
def new_page(browser, console_errors):
    contexts = []

    def make(width=1280, height=900):
        context = browser.new_context(viewport={"width": width, "height": height})
        context.set_default_timeout(10_000)
        contexts.append(context)
        return console_errors.watch(context.new_page())

    yield make
    for context in contexts:
        context.close()


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
