"""The control plane's config documents: validate, number, sign, store, audit,
roll back; and their pickup by a node's watcher over Redis (pub/sub, then poll)."""

import datetime
import json
import time

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.db.utils import DatabaseError

from inference_client.control import documents
from inference_client.models import (
    ConfigDocumentRecord,
    ControlEvent,
    ImmutableConfigDocumentError,
    ModelVersion,
)
from inference_protocol import config, config_document
from tests.polling import wait_for


def publish(content, **kwargs):
    return documents.config_publish(content=content, actor="ops", **kwargs)


@pytest.fixture
def base(settings):
    return config.bootstrap_content(settings)


def test_should_number_sign_store_apply_and_audit_a_document(db, base, settings,
                                                             django_capture_on_commit_callbacks):
    content = documents.content_with(base, ["rate_limits.free.requests_per_min=7"])
    with django_capture_on_commit_callbacks(execute=True):
        first = publish(content, reason="tighter free tier")
    with django_capture_on_commit_callbacks(execute=True):
        second = publish(documents.content_with(content, ["rate_limits.free.requests_per_min=8"]))
    assert (first.number, first.parent, second.number, second.parent) == (1, 0, 2, 1)
    signed = config_document.ConfigDocument.from_json(second.document)
    signed.verify(settings.CONFIG_PUBLIC_KEY)  # raises if not
    assert config.current().number == 2 and config.current().rate_limits["free"]["requests_per_min"] == 8
    event = ControlEvent.objects.get(target="config:1")
    assert event.action == "config_publish" and event.detail["reason"] == "tighter free tier"
    assert documents.content_diff(first.content, second.content) == [
        {"path": "rate_limits.free.requests_per_min", "old": 7, "new": 8}]


def test_should_refuse_an_invalid_document_naming_every_problem_before_signing(db, base):
    bad = documents.content_with(base, [
        'models.smollm2.engine="warp-drive"', "rate_limits.paid.tokens_per_min=-5",
        'models.fixed-cost.versions={"v1": 70, "v2": 20}'])
    with pytest.raises(config_document.ConfigError) as err:
        publish(bad)
    text = "\n".join(err.value.problems)
    assert "unknown engine 'warp-drive'" in text and "must not be negative (-5)" in text
    assert "weights sum to 90, not 100" in text and "fixed-cost@v1 was never published" in text
    assert not ConfigDocumentRecord.objects.exists()


def test_should_accept_weights_over_published_versions(db, base):
    for version in ("v1", "v2"):
        ModelVersion.objects.create(model="fixed-cost", version=version, manifest={}, total_size=1,
                                    manifest_sha256="0" * 64, created_by="t",
                                    created_at=datetime.datetime.now(datetime.UTC))
    record = publish(documents.content_with(base, ['models.fixed-cost.versions={"v1": 90, "v2": 10}']))
    assert record.content["models"]["fixed-cost"]["versions"] == {"v1": 90, "v2": 10}


def test_should_keep_documents_immutable_in_the_orm_and_below_it(db, base):
    record = publish(base)
    with pytest.raises(ImmutableConfigDocumentError):
        record.save()
    with pytest.raises(ImmutableConfigDocumentError):
        ConfigDocumentRecord.objects.filter(pk=record.pk).update(reason="x")
    if connection.vendor == "postgresql":
        with pytest.raises(DatabaseError, match="immutable"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("UPDATE inference_client_configdocumentrecord SET reason = 'x'")


def test_should_roll_back_by_publishing_the_parents_content_as_the_next_number(
        db, base, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        publish(documents.content_with(base, ["rate_limits.free.requests_per_min=7"]))
        publish(documents.content_with(base, ["rate_limits.free.requests_per_min=9"]))
    with django_capture_on_commit_callbacks(execute=True):
        rollback = documents.config_rollback(actor="ops", reason="9 was too many")
    assert rollback.number == 3 and rollback.parent == 2
    assert rollback.content == ConfigDocumentRecord.objects.get(number=1).content
    assert config.current().number == 3 and config.current().rate_limits["free"]["requests_per_min"] == 7
    event = ControlEvent.objects.get(target="config:3")
    assert event.action == "config_rollback" and event.detail["rolled_back"] == 2


def test_should_refuse_bad_input_on_the_command_line(db):
    with pytest.raises(CommandError, match="rate_limits.free.requests_per_min: must not be negative"):
        call_command("config_publish", "--set", "rate_limits.free.requests_per_min=-1")
    with pytest.raises(CommandError, match="nothing to roll back"):
        call_command("config_publish", "--rollback")
    with pytest.raises(CommandError, match="PATH=VALUE"):
        call_command("config_publish", "--set", "rate_limits")


# ---- pickup by a node, over the real Redis ----------------------------------------

def _watch(pubsub: bool, poll_s: float):
    from django.conf import settings

    from core.redis import get_redis

    bootstrap = config.current().content
    node = config.ConfigState(lambda: bootstrap, lambda: settings.CONFIG_PUBLIC_KEY)
    watcher = config.ConfigWatcher(node, get_redis, poll_s=poll_s, pubsub=pubsub)
    watcher.start()
    return node, watcher


@pytest.mark.needs_services
@pytest.mark.parametrize("pubsub, poll_s", [(True, 60.0), (False, 0.2)], ids=["pubsub", "poll"])
def test_should_pick_up_a_published_document_by_pubsub_or_by_the_poll(db, base, pubsub, poll_s, settings):
    node, watcher = _watch(pubsub, poll_s)
    try:
        if pubsub:  # subscribed before the publish, so the poll (60 s) cannot be what delivers it
            from core.redis import get_redis
            wait_for(lambda: get_redis().pubsub_numsub(config.channel())[0][1] > 0, timeout=5,
                     what="the watcher to subscribe")
        doc = config_document.ConfigDocument(number=1, parent=0, content=documents.content_with(
            base, ["rate_limits.free.requests_per_min=11"]), created_at="t", created_by="ops",
        ).signed(settings.CONFIG_SIGNING_KEY)
        started = time.monotonic()
        documents.config_broadcast(doc)
        wait_for(lambda: node.snapshot.number == 1, timeout=2, interval=0.01, what="pickup within 2 s")
        assert time.monotonic() - started < 2
        assert node.snapshot.rate_limits["free"]["requests_per_min"] == 11
    finally:
        watcher.stop()


@pytest.mark.needs_services
def test_should_never_replace_a_newer_document_in_redis(db, base, settings):
    from core.redis import get_redis

    make = lambda n: config_document.ConfigDocument(number=n, parent=n - 1, content=base, created_at="t",  # noqa: E731
                                           created_by="ops").signed(settings.CONFIG_SIGNING_KEY)
    config.broadcast(get_redis(), make(5))
    config.broadcast(get_redis(), make(4))
    assert json.loads(get_redis().get(config.latest_key()))["number"] == 5
