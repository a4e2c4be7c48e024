"""Scoring one rule's sampled generations (evals.online): function evaluators
here, judges through the gateway's batch lane (settings.EVAL_LANE) as the
rule's author, at batch priority. A generation is scored once per rule (the
unique (rule, generation) row); one the judge could not score is kept with
its error and no score, and counted as failed."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import transaction
from django.utils.module_loading import import_string

from core.error_codes import DomainError
from core.leases import release_connection
from playground.calls.builder import version_render

from .evaluators import Score, judge_score, score_output
from .models import OnlineEvalRule, OnlineScore
from .online import count
from .run_job import JudgePrompt, chat_body

NAMESPACE = uuid.UUID("0b7e4f2a-5c1d-4e8b-9a6f-3d2c1b0a9e8f")


def _judged(rule: OnlineEvalRule, generations: list[dict]) -> list[tuple[Score | None, str]]:
    """The judge's (score, error code) of each generation; a failed call has no score."""
    judge = JudgePrompt(rule.evaluator)
    out: list[tuple[Score | None, str]] = [(None, "")] * len(generations)
    requests, pending = [], []
    for index, g in enumerate(generations):
        values = {**g["variables"], "output": g["output"], "expected": ""}
        try:
            _, messages = version_render(version=judge.version, body=judge.body,
                                         variables={k: v for k, v in values.items() if k in judge.uses})
        except DomainError as exc:
            out[index] = (Score(0.0, False, f"the judge could not render: {exc.message}"), exc.code)
            continue
        request_id = uuid.uuid5(NAMESPACE, f"{rule.pk}/{g['id']}").hex
        requests.append({"request_id": request_id, "prompt_version": str(judge.version.pk),
                         "body": chat_body(request_id, model=judge.version.model_name, messages=messages,
                                           params=judge.params)})
        pending.append(index)
    if not requests:
        return out
    user = rule.created_by or rule.prompt.owner
    lane = import_string(settings.EVAL_LANE)(user=user)
    release_connection()  # the window waits on generations with no connection held
    events = lane.run(requests, keep_going=lambda: True, timeout_s=settings.EVAL_CELL_TIMEOUT_S,
                      no_worker_wait_s=settings.EVAL_NO_WORKER_WAIT_S) or []
    for index, event in zip(pending, events, strict=True):
        if event["type"] == "done":
            out[index] = (judge_score(event["result"].get("text", ""), schema=judge.version.response_schema,
                                      threshold=judge.threshold), "")
        else:
            out[index] = (Score(0.0, False, str(event.get("message", ""))[:2000]),
                          event.get("code") or "judge_failed")
    return out


def score_generations(rule_id: int, generations: list[dict]) -> int:
    """Score each generation ({"id", "version_id", "output", "variables",
    "created_at"}) the rule has not scored yet; how many got a score."""
    rule = OnlineEvalRule.objects.filter(pk=rule_id, enabled=True).select_related(
        "created_by", "prompt__owner").first()
    if rule is None:
        return 0  # deleted or disabled since they were sampled
    done = set(OnlineScore.objects.filter(rule=rule, generation_id__in=[g["id"] for g in generations])
               .values_list("generation_id", flat=True))
    todo = [g for g in generations if g["id"] not in done]
    if not todo:
        return 0
    spec = rule.evaluator
    if spec["name"] == "judge":
        results = _judged(rule, todo)
    else:
        results = [(Score(**score_output([spec], output=g["output"], expected=None,
                                         variables=g["variables"])[spec["key"]]), "") for g in todo]
    rows = [OnlineScore(rule=rule, generation_id=g["id"], prompt_version_id=g["version_id"], key=rule.key,
                        score=None if error else score.score, passed=None if error else score.passed,
                        reason=score.reason[:2000] if score else "", error=error,
                        generated_at=g["created_at"])
            for g, (score, error) in zip(todo, results, strict=True)]
    failed = sum(1 for row in rows if row.error)
    with transaction.atomic():  # a reader sees the scores and their counts together
        OnlineScore.objects.bulk_create(rows, ignore_conflicts=True)
        count(rule.pk, scored=len(rows) - failed, failed=failed)
    return len(rows) - failed
