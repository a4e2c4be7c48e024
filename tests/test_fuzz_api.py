"""The API fuzzer: schemathesis over the app's OpenAPI schema (drf-spectacular's
/api/schema/), against the app in-process (Django's WSGI handler, in the test's
database transaction), authenticated with an API key of a user the test creates.

Every operation in the schema is called with generated data, valid and invalid
(positive and negative modes), a few examples each, derandomized so a failure
reproduces. Path parameters mostly name objects the test created (a prompt with a
version and a label, a second key), so the calls reach the code behind the 404;
every other call keeps the generated value. The one call left out is revoking the
key the fuzzer authenticates with (`DELETE /api/accounts/keys/{key_id}` with its
own id): it would turn every later call into a 401.

The bar: no 5xx, ever; and each answer is one the schema documents.
"""

import contextlib
import itertools
import json

import pytest
import schemathesis
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, Phase, settings
from rest_framework.test import APIClient
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.factories import ApiKeyFactory, LabelFactory, PromptVersionFactory, UserFactory

pytestmark = [pytest.mark.needs_services, pytest.mark.django_db]

SCHEMA_PATH = "/api/schema/"


@pytest.fixture(scope="module")
def wsgi_app():
    return WSGIHandler()


@contextlib.contextmanager
def _keeping_the_connection():
    """As Django's test client does: a request must not close the test's database
    connection (it holds the test's transaction)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture(scope="module")
def api_schema(wsgi_app, django_db_blocker):
    with django_db_blocker.unblock(), _keeping_the_connection():
        return schemathesis.openapi.from_wsgi(SCHEMA_PATH, wsgi_app)


# The operations that generate need a worker: tests/inference_client/test_fuzz_generation.py
# fuzzes them against the live stack.
GENERATION = r"^/v1/(chat/completions|completions|embeddings)$"
schema = schemathesis.pytest.from_fixture("api_schema").exclude(path_regex=GENERATION)


def _created(response, status=201):
    assert response.status_code == status, response.content[:500]
    return response.json()


@pytest.fixture
def fuzz_data(db, settings):
    """What the path parameters resolve to: objects of the authenticated user (made
    through the API where it can), and a second user to share with and write to."""
    settings.BATCH_DISPATCH = "none"  # a batch the fuzzer creates is only stored
    user = UserFactory()
    friend = UserFactory()
    key, raw = ApiKeyFactory.create_with_raw(user=user, name="fuzzer")
    other_key, _ = ApiKeyFactory.create_with_raw(user=user, name="revocable")
    version = PromptVersionFactory(prompt__owner=user)
    LabelFactory(version=version, name="production")
    prompt_id = str(version.prompt_id)

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    team = _created(client.post("/api/accounts/teams", {"name": "fuzzers"}, format="json"))
    grant = _created(client.post(f"/api/prompts/{prompt_id}/grants",
                                 {"username": friend.username, "role": "viewer"}, format="json"))
    link = _created(client.post(f"/api/prompts/{prompt_id}/links", {"mode": "public"}, format="json"))
    message = _created(client.post("/api/chat/messages", {"to": friend.pk, "client_msg_id": "k1",
                                                          "body": "hi"}, format="json"))
    dataset = _created(client.post("/api/datasets/", {"name": "cases"}, format="json"))
    imported = _created(client.post(f"/api/datasets/{dataset['id']}/import", {
        "file": SimpleUploadedFile("cases.csv", b"q,expected\nabc,cba\n", content_type="text/csv")},
        format="multipart"))
    run = _created(client.post("/api/evals/runs", {
        "dataset": dataset["id"], "evaluators": ["exact"],
        "columns": [{"prompt": prompt_id, "version": str(version.pk)}]}, format="json"))
    endpoint = _created(client.post("/api/webhooks", {"url": "http://93.184.216.34/hook",
                                                      "events": ["label.moved"]}, format="json"))
    model = client.get("/v1/models").json()["data"][0]["id"]
    line = {"custom_id": "r1", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": model, "messages": [{"role": "user", "content": "hi"}]}}
    upload = _created(client.post("/v1/files", {"purpose": "batch", "file": SimpleUploadedFile(
        "in.jsonl", json.dumps(line).encode() + b"\n")}, format="multipart"), status=200)
    batch = _created(client.post("/v1/batches", {
        "input_file_id": upload["id"], "completion_window": "24h", "endpoint": "/v1/chat/completions"},
        format="json"), status=200)
    return {
        # Every operation starts from this state (the test rolls back to it).
        "savepoint": transaction.savepoint(),
        "operation": None,
        "raw_key": raw,
        "own_key_id": key.pk,
        "path": {
            "key_id": other_key.pk,
            "prompt_id": prompt_id,
            "version_id": str(version.pk),
            "name": "production",
            "team_id": team["id"],
            "grant_id": grant["id"],
            "link_id": link["id"],
            "user_id": friend.pk,
            "conversation_id": message.get("conversation_id") or message.get("conversation"),
            "dataset_id": dataset["id"],
            "import_id": imported.get("id"),
            "run_id": run["id"],
            "endpoint_id": endpoint["id"],
            "file_id": upload["id"],
            "batch_id": batch["id"],
            "model": model,
        },
    }


# No 5xx; and every answer is one the schema documents: its status (a refusal is the
# `4XX` error shape, core/openapi.py), its media type and its body's schema.
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]

_turn = itertools.count()
# The stateful phase's bound: scenarios, and calls in each (CI time, not coverage, sets it).
STATEFUL_SCENARIOS = 30
STATEFUL_STEPS = 8


def _resolve_path_parameters(case, data, *, named: bool | None = None):
    """Two calls in three name the test's objects, the third keeps what was generated;
    `named` decides it instead (the stateful phase: the same for every replay)."""
    params = case.path_parameters or {}
    if named is None:
        named = bool(next(_turn) % 3)
    if named:
        for name in params:
            if name in data["path"]:
                params[name] = data["path"][name]
    # The one call left out: revoking the fuzzer's own key.
    if case.method.upper() == "DELETE" and case.path.startswith("/api/accounts/keys/") \
            and str(params.get("key_id")) == str(data["own_key_id"]):
        params["key_id"] = data["path"]["key_id"]


@schema.parametrize()
@settings(max_examples=6, derandomize=True, deadline=None, database=None,
          phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_api_never_answers_with_a_server_error(case, fuzz_data, wsgi_app):
    # All operations run in this one test, in schema order: each starts from the
    # fixture's objects, not from what the operations before it deleted or cancelled.
    if fuzz_data["operation"] != case.operation.label:
        transaction.savepoint_rollback(fuzz_data["savepoint"])
        fuzz_data["operation"] = case.operation.label
    _resolve_path_parameters(case, fuzz_data)
    with _keeping_the_connection():
        response = case.call(app=wsgi_app, headers={"Authorization": f"Bearer {fuzz_data['raw_key']}"})
    case.validate_response(response, checks=CHECKS)


def test_chains_of_calls_never_answer_with_a_server_error(api_schema, fuzz_data, wsgi_app):
    """The stateful phase: scenarios along the schema's links (a create, then reads,
    actions and deletes of what it created: core/openapi.py) and the ones schemathesis
    infers, from the fixture's state, a bounded number of steps."""
    headers = {"Authorization": f"Bearer {fuzz_data['raw_key']}"}

    class Chains(api_schema.exclude(path_regex=GENERATION).as_state_machine()):
        def setup(self):
            # Each scenario from the same state: Hypothesis replays a scenario's choices
            # and needs the same answers (rate-limit buckets included) to follow the same links.
            transaction.savepoint_rollback(fuzz_data["savepoint"])
            cache.clear()

        def step(self, input):
            # A chain's first call names the fixture's objects; later ones, what a link took.
            _resolve_path_parameters(input.case, fuzz_data, named=input.transition is None)
            return super().step(input)

        def call(self, case, **kwargs):
            with _keeping_the_connection():
                return case.call(app=wsgi_app, headers=headers)

        def validate_response(self, response, case, **kwargs):
            case.validate_response(response, checks=CHECKS)

    Chains.run(settings=settings(max_examples=STATEFUL_SCENARIOS, stateful_step_count=STATEFUL_STEPS,
                                 derandomize=True, deadline=None, database=None,
                                 suppress_health_check=list(HealthCheck)))
