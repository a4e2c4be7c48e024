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

import itertools

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, settings
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
    # As Django's test client does: a request must not close the test's connection
    # (it holds the test's transaction).
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield WSGIHandler()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture(scope="module")
def api_schema(wsgi_app, django_db_blocker):
    with django_db_blocker.unblock():
        return schemathesis.openapi.from_wsgi(SCHEMA_PATH, wsgi_app)


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.fixture
def fuzz_data(db):
    """What the path parameters resolve to: objects of the authenticated user."""
    user = UserFactory()
    key, raw = ApiKeyFactory.create_with_raw(user=user, name="fuzzer")
    other_key, _ = ApiKeyFactory.create_with_raw(user=user, name="revocable")
    version = PromptVersionFactory(prompt__owner=user)
    LabelFactory(version=version, name="production")
    return {
        "raw_key": raw,
        "own_key_id": key.pk,
        "path": {
            "key_id": other_key.pk,
            "prompt_id": str(version.prompt_id),
            "version_id": str(version.pk),
            "name": "production",
        },
    }


# No 5xx; and every answer is one the schema documents: its status (a refusal is the
# `4XX` error shape, core/openapi.py), its media type and its body's schema.
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]

_turn = itertools.count()


def _resolve_path_parameters(case, data):
    """Two calls in three name the test's objects; the third keeps what was generated."""
    params = case.path_parameters or {}
    if next(_turn) % 3:
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
    _resolve_path_parameters(case, fuzz_data)
    response = case.call(app=wsgi_app, headers={"Authorization": f"Bearer {fuzz_data['raw_key']}"})
    case.validate_response(response, checks=CHECKS)
