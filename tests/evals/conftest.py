"""Evaluations: datasets, runs, the gate. Runs go through the real scheduler
and the fixed-cost engine (its output is the input reversed), on the
in-process backend unless a test needs the Celery worker."""

import pytest

from tests.factories import PromptFactory, PromptVersionFactory

# Its own model name, so no other suite's scheduler or queue is shared.
MODEL = "eval-fixed-cost"
SPEC = {"engine": "fixed_cost", "max_inputs": 32, "call_s": 0.005}


@pytest.fixture(autouse=True)
def _eval_settings(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.INFERENCE_MODELS = {**settings.INFERENCE_MODELS, MODEL: SPEC}
    settings.EVAL_DISPATCH = "none"  # tests drive runs themselves unless they say otherwise
    settings.EVAL_NO_WORKER_WAIT_S = 0
    yield settings
    from inference_protocol import backend as protocol_backend

    protocol_backend.get_backend.cache_clear()  # a backend chosen by use_backend goes with the test


def use_backend(settings, path: str):
    """Make ``path`` the process's inference backend (the one the gateway's
    batch lane submits to) for this test."""
    from inference_protocol import backend as protocol_backend

    settings.INFERENCE_BACKEND = path
    protocol_backend.get_backend.cache_clear()
    return protocol_backend.get_backend()


@pytest.fixture
def backend(settings):
    """The in-process worker (the embedded default's) as the backend: events
    through this run's log (Redis where the services run, else memory)."""
    return use_backend(settings, "inference_worker.inprocess.InProcessBackend")


@pytest.fixture
def echo_version(user):
    """A version whose user message is just {{q}}: the engine answers q reversed."""
    prompt = PromptFactory(owner=user)
    return PromptVersionFactory(prompt=prompt, body="{{q}}", model_name=MODEL)


def rows(*pairs, **extra):
    return [{"variables": {"q": q, **extra}, "expected": e} for q, e in pairs]
