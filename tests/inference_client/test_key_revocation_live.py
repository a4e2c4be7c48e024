"""API keys are cached per gateway process (accounts.keycache), yet a revoked
key is refused on the very next /v1 request on every process."""

import json
from contextlib import ExitStack

import httpx
import pytest

from tests.inference_client.conftest import MODELS, chat, make_key, uvicorn_server

# Needs services: two gateway processes sharing PostgreSQL and Redis.
pytestmark = [pytest.mark.slow, pytest.mark.needs_services]


@pytest.fixture
def two_gateways(django_db_blocker, worker, transactional_db):
    with ExitStack() as stack:
        yield [stack.enter_context(uvicorn_server(django_db_blocker, INFERENCE_MODELS=json.dumps(MODELS)))
               for _ in range(2)]


def test_should_refuse_a_revoked_key_on_the_next_request_on_another_process(two_gateways):
    a, b = two_gateways
    key, raw = make_key("paid")
    assert chat(a, raw, "warm a").status_code == 200  # both processes now hold the key in memory
    assert chat(b, raw, "warm b").status_code == 200
    revoke = httpx.delete(f"{a}/api/accounts/keys/{key.pk}", headers={"Authorization": f"Bearer {raw}"})
    assert revoke.status_code in (200, 204), revoke.text
    refused = chat(b, raw, "after")
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "revoked_api_key"
    assert chat(a, raw, "after").status_code == 401


def test_should_refuse_the_keys_of_a_deactivated_account_at_once(two_gateways):
    a, b = two_gateways
    key, raw = make_key("paid")
    assert chat(b, raw, "warm").status_code == 200
    key.user.is_active = False
    key.user.save()
    assert chat(b, raw, "after").status_code == 401
    assert chat(a, raw, "after").status_code == 401
