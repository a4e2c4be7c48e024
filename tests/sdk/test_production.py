"""The SDK's production calls (promptyard.production) against a live server:
generations listed across cursor pages with filters, one generation, a version's
figures, regression alerts listed, rolled back (and refused once closed), a
generation added to a dataset; the async client alike; a stranger's key sees
nothing."""

from __future__ import annotations

import datetime

import pytest
from django.db import connections
from promptyard import ApiError, AsyncPromptyard, NotFound, Promptyard

from evals.datasets import dataset_create
from generations.models import Generation
from generations.regression import regression_check
from generations.store import generations_store
from playground import services
from playground.models import Label, LabelMove
from tests.factories import PromptFactory, PromptVersionFactory
from tests.generations.conftest import entry
from tests.inference_client.conftest import make_key
from tests.sdk.conftest import MODEL

pytestmark = pytest.mark.needs_services  # a live server on PostgreSQL and Redis

N = 45  # generations a side, past REGRESSION_MIN_SAMPLES (40 here)


def _production(settings):
    """v1 in production, then moved to v2, which is slower: N generations each, an open alert."""
    settings.REGRESSION_MIN_SAMPLES = 40
    key, raw = make_key("paid")
    prompt = PromptFactory(owner=key.user)
    v1 = PromptVersionFactory(prompt=prompt, body="Hello {{name}}!", model_name=MODEL)
    v2 = PromptVersionFactory(prompt=prompt, parent=v1, body="Hi {{name}}!", model_name=MODEL)
    services.label_move(prompt=prompt, name="production", version_id=v1.pk, expected_version_id=None,
                        actor=key.user)
    services.label_move(prompt=prompt, name="production", version_id=v2.pk, expected_version_id=v1.pk,
                        actor=key.user)
    moved = LabelMove.objects.filter(label__prompt=prompt).latest("id").created_at
    t = moved.timestamp()
    generations_store([entry(v1, key.user, label="production", latency_ms=100 + i % 9, at=t - N - 1 + i)
                       for i in range(N)])
    generations_store([entry(v2, key.user, label="production", latency_ms=300 + i % 9, at=t + 1 + i,
                             status="error" if i == 0 else "ok", output=f"out {i}") for i in range(N)])
    assert regression_check(now=moved + datetime.timedelta(hours=1))
    return raw, prompt, v1, v2, moved


def test_should_list_read_and_act_on_production_data(live, settings):
    raw, prompt, v1, v2, moved = _production(settings)
    with Promptyard(live, raw) as py:
        listed = list(py.production.generations(prompt.pk, version=v2.pk, page_size=10))
        assert len(listed) == N and listed[0]["output_head"] == f"out {N - 1}"  # newest first, 5 pages
        errors = list(py.production.generations(prompt.pk, status="error"))
        assert [g["status"] for g in errors] == ["error"]
        early = list(py.production.generations(prompt.pk, until=moved))
        assert {g["version"] for g in early} == {str(v1.pk)}
        one = py.production.generation(listed[0]["id"])
        assert (one["output"], one["variables"]) == (f"out {N - 1}", {"name": "Ada"})

        figures = py.production.version_metrics(prompt.pk, v2.pk, days=1)
        assert figures["version"]["total"]["count"] == N and figures["previous"]["total"]["count"] == N

        [alert] = list(py.production.alerts(prompt.pk))
        assert (alert["label"], alert["check"]) == ("production", "latency_p95")
        assert py.production.rollback(prompt.pk, alert["id"])["status"] == "rolled_back"
        assert Label.objects.get(prompt=prompt, name="production").version_id == v1.pk
        with pytest.raises(ApiError) as closed:
            py.production.dismiss(prompt.pk, alert["id"])
        assert (closed.value.code, closed.value.status) == ("alert_resolved", 409)
        assert list(py.production.alerts(prompt.pk)) == []

        dataset = dataset_create(owner=prompt.owner, name="from production")
        made = py.production.add_to_dataset(listed[0]["id"], dataset.pk, expected="better")
        assert made["row_count"] == 1

    _, stranger = make_key("paid")
    with Promptyard(live, stranger) as py:
        with pytest.raises(NotFound):
            list(py.production.generations(prompt.pk))
        with pytest.raises(NotFound):
            py.production.generation(listed[0]["id"])


async def test_the_async_client_reads_the_same(live, settings):
    from asgiref.sync import sync_to_async

    raw, prompt, v1, v2, _ = await sync_to_async(_production)(settings)
    async with AsyncPromptyard(live, raw) as py:
        listed = [g async for g in py.production.generations(prompt.pk, label="production", page_size=20)]
        assert len(listed) == 2 * N
        assert (await py.production.version_metrics(prompt.pk, v2.pk))["version"]["total"]["count"] == N
        assert [a["check"] async for a in py.production.alerts(prompt.pk)] == ["latency_p95"]
    assert await sync_to_async(Generation.objects.filter(prompt_id=prompt.pk).count)() == 2 * N
    await sync_to_async(connections.close_all)()
