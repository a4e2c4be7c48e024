"""The usage writer's batch INSERT (inference_client/usage.py): every field of a
record lands as sent, a record claimed twice is stored once, and the batch's keys
are marked used. PostgreSQL takes the batch as one JSON parameter, SQLite (the
embedded default) through the ORM: each test runs in both passes."""

import uuid

import pytest
from django.utils import timezone

from accounts.models import ApiKey
from inference_client import usage
from inference_client.models import UsageRecord
from tests.factories import ApiKeyFactory, UserFactory

pytestmark = pytest.mark.django_db


def full_record(user, key, **changes) -> dict:
    """A record as stages/record.py writes it, no field at its default."""
    return {**dict(
        user_id=user.pk, api_key_id=key.pk if key else None, request_id=uuid.uuid4().hex,
        model="m-1", version="v2", tier="paid", prompt_tokens=7, completion_tokens=11, latency_ms=42,
        ttft_ms=9, cache_hit="exact", status="error", error_code="worker_failed", end_user="end-user-1",
        prompt_version=str(uuid.uuid4()), prompt_label="production", eval_run=str(uuid.uuid4())), **changes}


def stored(record: dict) -> dict:
    row = UsageRecord.objects.values().get(request_id=record["request_id"])
    row["prompt_version"], row["eval_run"] = str(row["prompt_version"]), str(row["eval_run"])
    return row


def test_should_store_every_field_as_sent_once_and_mark_the_key_used():
    user = UserFactory()
    key, _ = ApiKeyFactory.create_with_raw(user=user, tier="paid")
    before = timezone.now()
    record = full_record(user, key)
    nulls = full_record(user, None, ttft_ms=None, prompt_version=None, eval_run=None)
    raw = usage.record_json(**record)
    usage._store([raw, usage.record_json(**nulls)])
    usage._store([raw])  # claimed again after a writer died before acknowledging
    row = stored(record)
    assert {k: row[k] for k in record} == record
    assert before <= row["created_at"] <= timezone.now()
    assert UsageRecord.objects.filter(request_id=record["request_id"]).count() == 1
    row = UsageRecord.objects.get(request_id=nulls["request_id"])
    assert (row.api_key_id, row.ttft_ms, row.prompt_version, row.eval_run) == (None, None, None, None)
    assert ApiKey.objects.get(pk=key.pk).last_used_at >= before

