"""Eval cells through the gateway's batch lane: the /v1 admission rules at batch
priority (the owner's tier budget, less the share kept for its interactive
calls), usage records tagged with the run, the prompt cache for identical cells."""

import pytest
from asgiref.sync import async_to_sync

from accounts.services import account_tier_set
from core.error_codes import DomainError
from core.redis import get_redis
from evals.datasets import dataset_create, dataset_version_create
from evals.models import EvalResult
from evals.run_job import cell_request_id, evalrun_drive
from evals.runs import evalrun_create
from inference_client import admission
from inference_client import metrics as m
from inference_client.batch_lane import serving_names
from inference_client.models import UsageRecord
from inference_client.stages.admit import admit_tokens
from inference_client.stages.call import Principal
from inference_protocol import config
from tests.evals.conftest import MODEL, rows, use_backend
from tests.evals.test_runs import Recording
from tests.factories import PromptVersionFactory

pytestmark = pytest.mark.needs_services  # admission and the cache live in Redis


@pytest.fixture
def dataset(user):
    dataset = dataset_create(owner=user, name="lane")
    dataset_version_create(dataset=dataset, author=user, add=rows(("abc", "cba"), ("hello", "olleh"),
                                                                  ("xyz", "zyx")))
    return dataset


def _limits(settings, tier: str, rpm: int, tpm: int = 100_000):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, tier: {"requests_per_min": rpm, "tokens_per_min": tpm}}


def _run(user, dataset, version):
    return evalrun_create(user=user, dataset_id=dataset.pk, evaluators=["exact"],
                          columns=[{"prompt": str(version.prompt_id), "version": str(version.pk)}])


def _requests_left(user, tier: str) -> int:
    bucket = admission.key_buckets(key_id=f"u{user.pk}", tier=tier, tokens=0)[:1]
    return admission.peek(buckets=bucket, redis=get_redis())[0]["remaining"]


def test_should_charge_the_owners_tier_and_record_usage_tagged_with_the_run(user, dataset, echo_version,
                                                                           backend, settings):
    account_tier_set(user=user, tier="paid")
    _limits(settings, "paid", rpm=8)  # a refill of one request per 7.5 s: none during the test
    run = _run(user, dataset, echo_version)
    assert evalrun_drive(run.pk) == "done"
    cells = EvalResult.objects.filter(run=run).select_related("column")
    records = UsageRecord.objects.filter(eval_run=run.pk)
    assert {r.request_id for r in records} == {cell_request_id(run.pk, c.column_id, c.row_id) for c in cells}
    assert {(r.user_id, r.tier, r.status, r.model, r.prompt_version) for r in records} == {
        (user.pk, "paid", "ok", MODEL, echo_version.pk)}
    assert sum(r.completion_tokens for r in records) == sum(c.completion_tokens for c in cells) == 11
    # One request each from the owner's paid bucket; half of it (4) stays for interactive calls.
    assert _requests_left(user, "paid") == 5
    principal = Principal(user, None, "paid", f"u{user.pk}", f"u{user.pk}")
    snapshot = config.current()

    def admit(lane):
        return async_to_sync(admit_tokens)(principal, MODEL, f"probe-{lane}", 0, check_queue=False,
                                     snapshot=snapshot, lane=lane)

    assert admit("batch").allowed  # 5 left: one more batch request fits above the reserve of 4
    with pytest.raises(DomainError) as refused:
        admit("batch")
    assert (refused.value.status, refused.value.extra["reason"]) == (429, "requests")
    assert admit("interactive").allowed  # the owner's own calls still find the reserve


def test_should_pace_cells_to_the_budget_above_the_interactive_reserve(user, dataset, echo_version,
                                                                      backend, settings):
    _limits(settings, "free", rpm=240)  # 4 requests a second; the batch lane keeps off the last 120
    key = admission.key_buckets(key_id=f"u{user.pk}", tier="free", tokens=0)[0].key
    now_s, now_us = get_redis().time()
    get_redis().hset(key, mapping={"l": 121, "t": now_s * 1000 + now_us // 1000})  # one cell's worth
    refused = m.REJECTED.labels("free", "requests")
    before = refused._value.get()
    run = _run(user, dataset, echo_version)
    assert evalrun_drive(run.pk) == "done"
    assert set(EvalResult.objects.filter(run=run).values_list("error_code", flat=True)) == {""}
    assert refused._value.get() > before  # the later cells waited for the refill...
    assert _requests_left(user, "free") >= 120  # ...and never took the interactive reserve


def test_should_answer_identical_greedy_cells_from_the_prompt_cache(user, dataset, settings):
    backend = use_backend(settings, "tests.evals.test_runs.Recording")
    greedy = PromptVersionFactory(prompt__owner=user, body="{{q}}", model_name=MODEL, temperature=0)
    first = _run(user, dataset, greedy)
    evalrun_drive(first.pk)
    Recording.submitted.clear()
    again = _run(user, dataset, greedy)
    evalrun_drive(again.pk)
    assert isinstance(backend, Recording) and Recording.submitted == []  # no generation the second time
    cells = EvalResult.objects.filter(run=again).order_by("row_index")
    assert [(c.output, c.cache_hit, c.served) for c in cells] == [
        ("cba", "exact", MODEL), ("olleh", "exact", MODEL), ("zyx", "exact", MODEL)]
    assert set(UsageRecord.objects.filter(eval_run=again.pk).values_list("cache_hit", flat=True)) == {"exact"}


def test_should_fail_a_cell_too_large_for_the_tier_and_finish_the_run(user, dataset, backend, settings):
    _limits(settings, "free", rpm=60, tpm=100)  # the batch lane may use 50 tokens a request at most
    version = PromptVersionFactory(prompt__owner=user, body="{{q}}", model_name=MODEL, max_tokens=60)
    run = _run(user, dataset, version)
    assert evalrun_drive(run.pk) == "done"
    codes = set(EvalResult.objects.filter(run=run).values_list("error_code", flat=True))
    assert codes == {"too_many_tokens"}
    assert not UsageRecord.objects.filter(eval_run=run.pk).exists()  # refused before admission: no record


def test_cells_of_a_versioned_model_wait_for_a_worker_of_a_serving_version(settings):
    model = "eval-versioned"
    settings.INFERENCE_MODELS = {**settings.INFERENCE_MODELS,
                                 model: {"engine": "fixed_cost", "versions": {"v1": 30, "v2": 70, "v3": 0}}}
    assert serving_names(MODEL) == [MODEL]
    assert serving_names(model) == [f"{model}@v1", f"{model}@v2"]  # v3 takes no traffic
