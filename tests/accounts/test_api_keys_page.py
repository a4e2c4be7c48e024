"""The API keys page: usage of the last 24 hours and what is left of each
key's per-minute buckets now, read from the live Redis buckets."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from core.redis import get_redis
from inference_client.models import UsageRecord
from tests.factories import ApiKeyFactory

pytestmark = pytest.mark.django_db


def usage(key, *, tokens, age=timedelta(0)):
    record = UsageRecord.objects.create(user=key.user, api_key=key, model="m", tier=key.tier,
                                        request_id=f"r{UsageRecord.objects.count()}", status="ok",
                                        prompt_tokens=tokens, completion_tokens=1)
    UsageRecord.objects.filter(pk=record.pk).update(created_at=timezone.now() - age)


@pytest.mark.needs_services  # rate limits live in Redis
def test_should_show_usage_of_the_last_day_and_remaining_limits_now(user, settings):
    key, _raw = ApiKeyFactory.create_with_raw(user=user, name="ci")
    usage(key, tokens=9)
    usage(key, tokens=19)
    usage(key, tokens=1000, age=timedelta(days=2))  # outside the window
    redis = get_redis()
    seconds, micros = redis.time()
    # The request bucket as the admission script leaves it: 10 left, charged just now.
    redis.hset(f"rl:k:{key.pk}:r", mapping={"l": 10, "t": seconds * 1000 + micros // 1000})
    redis.delete(f"rl:k:{key.pk}:t")
    try:
        client = Client()
        client.force_login(user)
        page = client.get("/settings/api-keys/")
    finally:
        redis.delete(f"rl:k:{key.pk}:r")
    assert page.status_code == 200
    row = next(k for k in page.context["keys"] if k.pk == key.pk)
    assert row.usage_24h == {"requests": 2, "tokens": 30}
    assert page.context["summary"]["requests"] == 2
    limits = settings.RATE_LIMITS["free"]
    # Refilled at 1 request/s since the charge: a second or two of slack at most.
    assert 10 <= row.limits_now["requests"]["remaining"] <= 12
    assert row.limits_now["requests"]["limit"] == limits["requests_per_min"]
    assert row.limits_now["tokens"]["remaining"] == limits["tokens_per_min"]  # never used: full
    assert b"2 req \xc2\xb7 30 tok" in page.content
