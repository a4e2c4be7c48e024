"""Limits without restarts: a tier's limits and the capacity thresholds come from
the current config document, applied by a running gateway within 2 s."""

import dataclasses
import time

import pytest

from inference_client import capacity
from inference_client.control import documents
from inference_protocol import config
from inference_protocol.config_document import ConfigDocument
from inference_protocol.signing import generate_keypair
from tests.inference_client.conftest import chat, make_key, stack_env, usage_settled
from tests.livesubprocess import free_port, running_server
from tests.polling import wait_for


@pytest.fixture
def gateway(worker, transactional_db, django_db_blocker, settings_models, settings):
    from django.db import connection

    db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    port = free_port()
    args = ["-m", "uvicorn", "config.asgi:application", "--port", str(port), "--lifespan", "off",
            "--log-level", "warning"]
    with running_server(args, stack_env(DATABASE_URL=url, LOG_LEVEL="INFO",
                                                CONFIG_NAMESPACE=settings.CONFIG_NAMESPACE), port) as server:
        yield server
        usage_settled()


@pytest.mark.needs_services
def test_should_apply_new_tier_limits_in_a_running_gateway_within_two_seconds(gateway, settings):
    _, key = make_key("free")
    assert chat(gateway.base, key, max_tokens=2).headers["x-ratelimit-limit-requests"] == "60"
    content = documents.content_with(config.bootstrap_content(settings),
                                     ["rate_limits.free.requests_per_min=7"])
    published = time.monotonic()
    record = documents.config_publish(content=content, actor="ops", reason="free tier 7/min")

    def limit():
        return chat(gateway.base, key, max_tokens=2).headers.get("x-ratelimit-limit-requests") == "7"
    wait_for(limit, timeout=2, interval=0.05, what="the gateway to apply the new limit")
    assert time.monotonic() - published < 2

    # A forged document (another key) is refused with a logged reason; the limit stays.
    forged = dataclasses.replace(ConfigDocument.from_json(record.document), number=record.number + 1,
                                 parent=record.number).signed(generate_keypair()[0])
    from core.redis import get_redis
    config.broadcast(get_redis(), forged)  # into this test's namespace (settings)
    wait_for(lambda: "signature does not verify" in gateway.output(), timeout=3, what="the logged refusal")
    assert chat(gateway.base, key, max_tokens=2).headers["x-ratelimit-limit-requests"] == "7"


@pytest.mark.any_profile
@pytest.mark.django_db  # this process signs: its floor is its database of published documents
def test_should_take_the_capacity_thresholds_from_the_current_document(settings):
    record = {"worker": "w", "model": "m", "healthy": True, "max_batch_size": 8, "queue_length": 12,
              "tokens_per_s": 0, "busy_fraction": 0}
    assert capacity.step_model("m", [record], 0, None)["zone"] == "green"  # queue 12/8 = 1.5 < 2 (yellow)
    content = documents.content_with(config.bootstrap_content(settings), ["capacity.red_queue=1.0"])
    doc = ConfigDocument(number=1, parent=0, content=content, created_at="t", created_by="ops")
    assert config.state().offer(doc.signed(settings.CONFIG_SIGNING_KEY))
    assert capacity.step_model("m", [record], 0, None)["zone"] == "red"
