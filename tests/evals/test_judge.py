"""LLM-as-judge: a saved prompt version with a response schema scores each
output; judges without one (or on an engine that cannot constrain to it) are refused."""

import pytest

from core.error_codes import DomainError
from evals.datasets import dataset_create, dataset_version_create
from evals.evaluators import judge_score
from evals.models import EvalResult
from evals.run_job import evalrun_drive
from evals.runs import evalrun_create
from tests.evals.conftest import MODEL, rows
from tests.factories import PromptFactory, PromptVersionFactory

SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "number"}, "reason": {"type": "string"}},
    "required": ["score", "reason"],
}
JUDGE_BODY = (
    "Question: {{q}}\nExpected answer: {{expected}}\nAnswer given: {{output}}\n"
    "Score the answer from 0 (wrong) to 1 (right) and give a short reason, as JSON."
)


@pytest.fixture
def dataset(user):
    dataset = dataset_create(owner=user, name="judged")
    dataset_version_create(dataset=dataset, author=user, add=rows(("abc", "cba"), ("hello", "world")))
    return dataset


def _create(user, dataset, column, judge, **args):
    return evalrun_create(
        user=user,
        dataset_id=dataset.pk,
        columns=[{"prompt": str(column.prompt_id), "version": str(column.pk)}],
        evaluators=[
            "exact",
            {"name": "judge", "args": {"prompt": str(judge.prompt_id), "version": str(judge.pk), **args}},
        ],
    )


@pytest.mark.any_profile
def test_should_turn_a_judge_reply_into_a_score():
    assert judge_score('{"score": 0.8, "reason": "close"}', schema=SCHEMA, threshold=0.5).as_dict() == {
        "score": 0.8,
        "passed": True,
        "reason": "close",
    }
    assert judge_score('{"score": 7, "reason": "x"}', schema=SCHEMA, threshold=0.5).score == 1.0  # clamped
    assert "not JSON" in judge_score("great!", schema=SCHEMA, threshold=0.5).reason
    assert "schema" in judge_score('{"score": "high"}', schema=SCHEMA, threshold=0.5).reason


def test_should_refuse_judges_without_a_schema_or_on_an_engine_that_cannot_constrain(
    user, dataset, echo_version
):
    cases = [
        (
            PromptVersionFactory(prompt=PromptFactory(owner=user), body=JUDGE_BODY, model_name="smollm2"),
            "judge_without_schema",
        ),
        (
            PromptVersionFactory(
                prompt=PromptFactory(owner=user),
                body=JUDGE_BODY,
                model_name="smollm2",
                response_schema={"type": "object", "properties": {"score": {"type": "number"}}},
            ),
            "judge_schema_invalid",
        ),
        (
            PromptVersionFactory(
                prompt=PromptFactory(owner=user), body=JUDGE_BODY, model_name=MODEL, response_schema=SCHEMA
            ),
            "unsupported_parameter",
        ),
        (
            PromptVersionFactory(
                body=JUDGE_BODY, model_name="smollm2", response_schema=SCHEMA
            ),  # not the user's
            "prompt_not_found",
        ),
    ]
    for judge, code in cases:
        with pytest.raises(DomainError) as exc:
            _create(user, dataset, echo_version, judge)
        assert exc.value.code == code
    with pytest.raises(DomainError) as exc:
        _create(user, dataset, echo_version, cases[0][0], threshold=2)
    assert exc.value.code == "invalid_evaluator_args"


@pytest.mark.any_profile
def test_should_score_each_output_with_a_saved_judge_prompt_on_smollm2(user, echo_version, backend):
    dataset = dataset_create(owner=user, name="one row")  # one judge call: SmolLM2 is the slow part
    dataset_version_create(dataset=dataset, author=user, add=rows(("abc", "cba")))
    judge = PromptVersionFactory(
        prompt=PromptFactory(owner=user),
        body=JUDGE_BODY,
        model_name="smollm2",
        response_schema=SCHEMA,
        temperature=0,
        max_tokens=24,
    )
    run = _create(user, dataset, echo_version, judge)
    assert evalrun_drive(run.pk) == "done"
    for result in EvalResult.objects.filter(run=run):
        judged = result.scores["judge"]
        assert 0.0 <= judged["score"] <= 1.0 and isinstance(judged["reason"], str), judged
        assert set(result.scores) == {"exact", "judge"}
    run.refresh_from_db()
    assert set(run.summary["columns"][0]["scores"]) == {"exact", "judge"}
