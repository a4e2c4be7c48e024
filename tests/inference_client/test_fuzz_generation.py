"""The API fuzzer (tests/test_fuzz_api.py) for the operations that
generate: /v1/chat/completions, /v1/completions, /v1/embeddings and the run routes, over HTTP
against the live stack (uvicorn, a real Celery worker on the fixed-cost engine,
the all-MiniLM embeddings worker), with a paid key so that the per-key limits
seldom refuse. Its server takes at most 64 embedding inputs a call
(INFERENCE_MAX_EMBEDDING_INPUTS): the schema says so, and its boundary case then
costs the CPU worker a fraction of a second, not 2,048 embeddings.

The schema's models are this deployment's; a call naming one is sent to the
model whose worker runs here (the SmolLM2 worker is not started for this), so
valid calls reach a worker and stream back. The bar: no 5xx, no hang (every call
answered within DEADLINE_S, streamed ones to their last event), and each answer
one the schema documents.
"""

import itertools

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.inference_client.conftest import (
    EMBED,
    MODEL,
    SMOL,
    make_key,
    usage_settled,
    uvicorn_server,
    wait_for_worker,
)

pytestmark = pytest.mark.needs_services

# Far above a fixed-cost call (50 ms) and an embedding batch, far below the
# gateway's own request timeout (120 s): a call still open at this point hangs.
DEADLINE_S = 20
SERVED_BY = {MODEL: MODEL, SMOL: MODEL, EMBED: EMBED}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(scope="module")
def fuzz_server(django_db_setup, django_db_blocker, celery_worker_proc, embed_worker_proc):
    with uvicorn_server(django_db_blocker, INFERENCE_MAX_EMBEDDING_INPUTS="64") as base:
        yield base


@pytest.fixture
def stack(fuzz_server, worker, transactional_db):
    wait_for_worker(EMBED)
    yield fuzz_server
    usage_settled()


@pytest.fixture
def live_schema(stack):
    return schemathesis.openapi.from_url(f"{stack}/api/schema/")


@pytest.fixture
def fuzz_key(live_schema):
    return make_key("paid")[1]


schema = schemathesis.pytest.from_fixture("live_schema").include(
    path_regex=r"^/v1/(chat/completions|completions|embeddings)$|/run$")


_turn = itertools.count()


def _fresh_idempotency_key(case):
    """Two calls in three get an Idempotency-Key of their own: a generated one
    comes back with other bodies (422 idempotency_key_reused) far more often than
    a client would reuse one, and would keep most calls from the worker."""
    headers = case.headers or {}
    turn = next(_turn)
    if "Idempotency-Key" in headers and turn % 3:
        headers["Idempotency-Key"] = f"fuzz-{turn}"


@schema.parametrize()
@settings(max_examples=8, derandomize=True, deadline=None, database=None,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
def test_generation_never_answers_with_a_server_error_or_hangs(case, stack, fuzz_key):
    if isinstance(case.body, dict) and str(case.body.get("model")) in SERVED_BY:
        case.body["model"] = SERVED_BY[case.body["model"]]
    _fresh_idempotency_key(case)
    response = case.call(base_url=stack, headers={"Authorization": f"Bearer {fuzz_key}"},
                         timeout=DEADLINE_S)
    case.validate_response(response, checks=CHECKS)
