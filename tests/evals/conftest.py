"""Evaluations: datasets, runs, the gate. Runs go through the real scheduler
and the fixed-cost engine (its output is the input reversed), on the
in-process backend unless a test needs the Celery worker."""

import pytest

from inference_protocol.events import MemoryEventLog
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
    return settings


@pytest.fixture
def backend():
    from inference_worker.inprocess import InProcessBackend

    return InProcessBackend(MemoryEventLog())


@pytest.fixture
def echo_version(user):
    """A version whose user message is just {{q}}: the engine answers q reversed."""
    prompt = PromptFactory(owner=user)
    return PromptVersionFactory(prompt=prompt, body="{{q}}", model_name=MODEL)


def rows(*pairs, **extra):
    return [{"variables": {"q": q, **extra}, "expected": e} for q, e in pairs]
