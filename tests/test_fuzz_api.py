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

The bar: no 5xx, ever; and each answer is one the schema documents. And the
schema says what the API validates: a request it calls valid (positive mode, with
the ids in bodies and queries naming the test's objects too) is never refused as
malformed, but for a reason that hangs on stored state (STATE_DEPENDENT).
bench/schema_fit.py prints every refusal of valid data, per operation.
"""

import contextlib
import dataclasses
import itertools
import json
import re

import pytest
import schemathesis
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, Phase, given, settings
from rest_framework.test import APIClient
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from accounts.models import Team
from accounts.services import team_create, team_invite, team_member_add
from evals.models import DatasetImport
from generations.models import RegressionAlert
from playground.models import LabelMove
from playground.ownership import transfer_offer
from playground.services import label_move
from tests.factories import ApiKeyFactory, LabelFactory, PromptFactory, PromptVersionFactory, UserFactory

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
GENERATION = r"^/v1/(chat/completions|completions|embeddings)$|/run$"
schema = schemathesis.pytest.from_fixture("api_schema").exclude(path_regex=GENERATION)


def _created(response, status=201):
    assert response.status_code == status, response.content[:500]
    return response.json()


def _regression_alert(version, moved_to) -> RegressionAlert:
    """An open alert of label `staging`, moved from `version` to `moved_to`."""
    prompt = version.prompt
    LabelFactory(version=version, name="staging")
    label_move(prompt=prompt, name="staging", version_id=moved_to.pk, expected_version_id=version.pk,
               actor=prompt.owner)
    move = LabelMove.objects.filter(label__name="staging").latest("id")
    return RegressionAlert.objects.create(
        prompt=prompt, label="staging", version=moved_to, previous_version=version, move_id=move.pk,
        moved_at=move.created_at, rule="latency_p95", value=400.0, previous_value=100.0, count=60,
        previous_count=60, p_value=1e-6)


@pytest.fixture
def fuzz_data(db, settings):
    """What the path parameters resolve to: objects of the authenticated user (made
    through the API where it can), and a second user to share with and write to."""
    settings.BATCH_DISPATCH = "none"  # a batch the fuzzer creates is only stored
    user = UserFactory()
    friend = UserFactory()
    key, raw = ApiKeyFactory.create_with_raw(user=user, name="fuzzer")
    other_key, _ = ApiKeyFactory.create_with_raw(user=user, name="revocable")
    # `name` has a default: a render with no variables renders.
    version = PromptVersionFactory(prompt__owner=user, variables={"name": "you"})
    LabelFactory(version=version, name="production")
    prompt_id = str(version.prompt_id)
    # Two edits of it: heads to diff and merge.
    ours, theirs = (PromptVersionFactory(prompt=version.prompt, parent=version) for _ in range(2))
    alert = _regression_alert(version, ours)
    # What is waiting for the user: an invitation to a friend's team, a prompt offered to them.
    invitation = team_invite(team=team_create(owner=friend, name="friends"), user=user, invited_by=friend)
    offer = transfer_offer(prompt=PromptFactory(owner=friend), actor=friend, username=user.username)

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    team = _created(client.post("/api/accounts/teams", {"name": "fuzzers"}, format="json"))
    team_member_add(team=Team.objects.get(pk=team["id"]), user=friend)
    grant = _created(client.post(f"/api/prompts/{prompt_id}/grants",
                                 {"username": friend.username, "role": "viewer"}, format="json"))
    link = _created(client.post(f"/api/prompts/{prompt_id}/links", {"mode": "public"}, format="json"))
    message = _created(client.post("/api/chat/messages", {"to": friend.pk, "client_msg_id": "k1",
                                                          "body": "hi"}, format="json"))
    dataset = _created(client.post("/api/datasets/", {"name": "cases"}, format="json"))
    imported = _created(client.post(f"/api/datasets/{dataset['id']}/import", {
        "file": SimpleUploadedFile("cases.csv", b"q,expected\nabc,cba\n", content_type="text/csv")},
        format="multipart"))
    dataset_version = imported["version"]["id"]
    dataset_grant = _created(client.post(f"/api/datasets/{dataset['id']}/grants",
                                         {"username": friend.username, "role": "viewer"}, format="json"))
    dataset_link = _created(client.post(f"/api/datasets/{dataset['id']}/links", {"mode": "public"},
                                        format="json"))
    background_import = DatasetImport.objects.create(dataset_id=dataset["id"], author=user, fmt="csv",
                                                     size=1, status="done")
    run = _created(client.post("/api/evals/runs", {
        "dataset": dataset["id"], "evaluators": ["exact"],
        "columns": [{"prompt": prompt_id, "version": str(version.pk)}]}, format="json"))
    rule = _created(client.post(f"/api/prompts/{prompt_id}/online-evals",
                                {"evaluator": "json_valid", "sample_rate": 0.5}, format="json"))
    endpoint = _created(client.post("/api/webhooks", {"url": "https://93.184.216.34/hook",
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
            "message_id": message["id"],
            "invitation_id": invitation.pk,
            "offer_id": str(offer.pk),
            "dataset_id": dataset["id"],
            "import_id": str(background_import.pk),
            "run_id": run["id"],
            "endpoint_id": endpoint["id"],
            "file_id": upload["id"],
            "batch_id": batch["id"],
            "rule_id": rule["id"],
            "model": model,
            "alert_id": alert.pk,
        },
        # Under /api/datasets/, the dataset's own.
        "dataset_path": {"version_id": dataset_version, "grant_id": dataset_grant["id"],
                         "link_id": dataset_link["id"]},
        # Ids in bodies and queries (the keys of _REFERENCES).
        "refs": {"username": friend.username, "user_pk": friend.pk, "team": team["id"],
                 "prompt": prompt_id, "version": str(version.pk), "label": "production",
                 "ours": str(ours.pk), "theirs": str(theirs.pk),
                 "dataset": dataset["id"], "dataset_version": dataset_version, "file": upload["id"],
                 "run": run["id"]},
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
        own = data["dataset_path"] if case.path.startswith("/api/datasets/") else {}
        for name in params:
            if name in own or name in data["path"]:
                params[name] = own.get(name, data["path"].get(name))
    # The one call left out: revoking the fuzzer's own key.
    if case.method.upper() == "DELETE" and case.path.startswith("/api/accounts/keys/") \
            and str(params.get("key_id")) == str(data["own_key_id"]):
        params["key_id"] = data["path"]["key_id"]


@schema.parametrize()
@pytest.mark.timeout(900)  # every operation in one test: 2-6 minutes on 2 shared cores, not a hang
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


# Fields of bodies and queries that name a stored object (fuzz_data's "refs"), by the
# paths they are on: a valid request names one that exists.
_REFERENCES = [
    (r"^/api/datasets/[^/]+/(links|versions|import)", {"version": "dataset_version",
                                                        "base": "dataset_version"}),
    (r"^/api/chat/", {"to": "user_pk", "user": "user_pk"}),
    (r"^/api/evals/(runs|estimate)$", {"dataset_version": "dataset_version"}),
    (r"^/v1/batches$", {"input_file_id": "file"}),
    (r"^/api/prompts/[^/]+/(diff|merge)", {"from": "version", "to": "ours",
                                           "ours": "ours", "theirs": "theirs"}),
    (r"^/api/(prompts|datasets|evals|accounts/teams|webhooks)", {
        "username": "username", "team": "team", "prompt": "prompt", "version": "version",
        "parent": "version", "expected": "version", "against": "version",
        "label": "label", "dataset": "dataset", "require_eval": "run"}),
]


def _resolve_references(case, data) -> None:
    """Each reference the generated body or query holds names the fixture's object
    (only those present: which fields a request has stays generated)."""
    fields = {}
    for pattern, names in reversed(_REFERENCES):  # the first pattern that matches wins
        if re.match(pattern, case.path):
            fields.update(names)

    def walk(value):
        if isinstance(value, dict):
            for key, inner in value.items():
                if key in fields and not isinstance(inner, dict | list):
                    value[key] = data["refs"][fields[key]]
                else:
                    walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    if isinstance(case.body, dict | list):
        walk(case.body)
    if case.query:
        walk(case.query)


@dataclasses.dataclass
class Call:
    operation: str
    status: int
    code: str | None
    field: str | None
    message: str
    request: str


def positive_calls(api_schema, data, app, *, examples: int) -> list[Call]:
    """Up to `examples` valid requests (positive mode: data the schema calls valid) to
    every operation but the generating ones, derandomized; each from the fixture's
    state (savepoint, empty cache: no throttle carries over), its path parameters and
    the ids in its body and query naming the fixture's objects."""
    calls = []
    for result in api_schema.exclude(path_regex=GENERATION).get_all_operations():
        _call_each(result.ok(), data, app, examples, calls)
    return calls


def _call_each(operation, data, app, examples: int, calls: list[Call]) -> None:
    headers = {"Authorization": f"Bearer {data['raw_key']}"}

    @given(case=operation.as_strategy(GenerationMode.POSITIVE))
    @settings(max_examples=examples, derandomize=True, deadline=None, database=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    def call(case):
        transaction.savepoint_rollback(data["savepoint"])
        cache.clear()
        _resolve_path_parameters(case, data, named=True)
        _resolve_references(case, data)
        with _keeping_the_connection():
            response = case.call(app=app, headers=headers)
        error = {}
        if response.status_code >= 400:
            error = response.json().get("error") or {}  # every refusal is the JSON error shape
        request = f"{case.media_type or ''} path={case.path_parameters} query={case.query} " \
                  f"body={case.body!r}"[:400]
        calls.append(Call(operation.label, response.status_code, error.get("code"), error.get("field"),
                          error.get("message", ""), request))

    call()


# Refusals of a valid request that hang on stored state, not on the request's shape, so
# no schema can rule them out (each with the reason).
STATE_DEPENDENT = {
    "invalid_variable_name": "a variable name is an identifier: OpenAPI 3.0 has no propertyNames to say it",
    "upload_invalid": "a body upload names a handle the presign call issued (signed, for a stored object)",
    "username_taken": "a signup with a username that exists",
    "weak_password": "a common password, or one like the username (Django's password validators)",
    "parent_required": "a prompt's first version has no parent, every later one names the one it edits",
    "base_required": "a dataset's first version has no base, every later one names the one it edits",
    "invalid_split": "a split names distinct versions of the prompt",
    "invalid_weights": "a split's weights add up to 100 (a sum no schema can say)",
    "endpoint_mismatch": "a batch's endpoint is the one its stored file's lines call",
    "webhook_host_unresolvable": "a webhook host that does not resolve (DNS, at call time)",
    "owner_cannot_leave": "the fixture's user owns its team; leaving is for other members",
    "cursor_from_future": "a read receipt beyond the conversation's last message",
    "invalid_expiry": "an expiry must be in the future, which a date in a schema cannot say",
    "webhook_url_forbidden": "a webhook host that resolves to a private address (DNS, at call time)",
    "invalid_file": "a batch file's content (JSONL of requests), which OpenAPI 3.0 cannot describe",
    "empty_file": "the same (a batch file of blank lines)",
    "invalid_rows": "an import's text (CSV or JSONL rows), which OpenAPI 3.0 cannot describe",
    "file_not_utf8": "the same",
    "invalid_csv": "the same", "invalid_csv_header": "the same",
    "invalid_format": "an imported file whose name says neither csv nor jsonl, and no format",
    "dataset_empty": "an import's text with no rows",
    "invalid_evaluator_args": "an evaluator's arguments, which depend on the evaluator named (a regex's RE2 "
                              "pattern, a JSON Schema, a judge's prompt version)",
    "evaluator_needs_expected": "contains without its own value (a field required by another's value)",
    "null_characters_not_allowed": "a NUL in a row's free-form metadata (keys included): OpenAPI 3.0 "
                                   "has no propertyNames to forbid it in any key",
}


def test_schema_documents_what_the_api_validates(api_schema, fuzz_data, wsgi_app):
    """A request the schema calls valid is never refused as malformed (400 or 422),
    but for a reason in STATE_DEPENDENT: the schema says what the code checks.
    bench/schema_fit.py prints the whole picture (every refusal, per operation)."""
    calls = positive_calls(api_schema, fuzz_data, wsgi_app, examples=10)
    disagreements = [c for c in calls if c.status in (400, 422) and c.code not in STATE_DEPENDENT]
    assert not disagreements, "\n".join(
        f"{c.operation}: {c.status} {c.code} ({c.field}): {c.message[:120]}\n    {c.request}"
        for c in disagreements)
