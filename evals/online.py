"""Online evaluation: a sampled share of a prompt's production generations
scored by a chosen evaluator, one rule per (evaluator, share, filter).

Which generations a rule scores is a hash of the rule and the generation's id
against its sample rate (`sampled`), so a rerun, a redelivered task or a
second writer agrees. The generations log picks them as it stores a batch and
queues their scoring (generations.online); evals.online_score scores them.
Evaluators that compare with an expected output cannot score production
traffic (it has none) and are refused (`evaluator_needs_expected`), except
`contains` with its own `value`. Judges call the model, at batch priority, as
the rule's author.

This module holds the rules and what is read back: per evaluator and version,
the scores in a window (`version_score_samples`) and their figures
(`version_online_figures`).
"""

from __future__ import annotations

import datetime
import hashlib
import statistics

from django.conf import settings
from django.db import transaction
from django.db.models import F

from core.error_codes import DomainError
from playground import selectors as prompt_selectors
from sharing.audit import audit_record

from .evaluators import check_evaluators, evaluator_get
from .models import OnlineCount, OnlineEvalRule, OnlineScore
from .runs import check_judges
from .summary import bootstrap_ci


def sampled(rule_id: int, generation_id: int, rate: float) -> bool:
    """Whether the rule scores the generation: the same answer every time."""
    digest = hashlib.sha256(f"online:{rule_id}:{generation_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64 < rate


def _evaluator(user, spec) -> dict:
    (resolved,) = check_evaluators([spec])
    evaluator = evaluator_get(resolved["name"])
    if evaluator.needs_expected and "value" not in resolved["args"]:
        raise DomainError(f"{evaluator.name} compares with an expected output, which production traffic "
                          "does not have: pick a reference-free evaluator (json_valid, json_schema, regex, "
                          "judge, contains with a value...).", code="evaluator_needs_expected",
                          field="evaluator")
    check_judges(user, [resolved])
    return resolved


def _version(prompt, version_id):
    if version_id is None:
        return None
    return prompt_selectors.version_get(prompt=prompt, version_id=str(version_id))


def rule_create(*, prompt, user, evaluator, sample_rate: float, label: str = "", version_id=None,
                enabled: bool = True) -> OnlineEvalRule:
    """A new rule on the prompt (the caller checked the user may edit it)."""
    resolved = _evaluator(user, evaluator)
    version = _version(prompt, version_id)
    with transaction.atomic():
        # The prompt's row is the lock: two creates never both pass the cap.
        type(prompt).objects.select_for_update().filter(pk=prompt.pk).first()
        if OnlineEvalRule.objects.filter(prompt=prompt).count() >= settings.ONLINE_EVAL_MAX_RULES:
            raise DomainError(f"A prompt has at most {settings.ONLINE_EVAL_MAX_RULES} online evaluation "
                              "rules (ONLINE_EVAL_MAX_RULES): delete one first.",
                              code="too_many_online_rules")
        rule = OnlineEvalRule.objects.create(prompt=prompt, label=label, version=version, key=resolved["key"],
                                             evaluator=resolved, sample_rate=sample_rate, enabled=enabled,
                                             created_by=user)
        _audit(rule, user, "online_eval.created")
    return rule


def _audit(rule: OnlineEvalRule, user, action: str) -> None:
    audit_record(prompt_id=rule.prompt_id, actor=user, action=action, target=f"online_eval:{rule.pk}",
                 detail={"evaluator": rule.evaluator, "sample_rate": rule.sample_rate, "label": rule.label,
                         "version": str(rule.version_id) if rule.version_id else None,
                         "enabled": rule.enabled})


def rule_get(*, prompt, rule_id) -> OnlineEvalRule:
    valid = str(rule_id).isdigit() and len(str(rule_id)) < 19  # a bigint
    rule = OnlineEvalRule.objects.filter(prompt=prompt, pk=rule_id).first() if valid else None
    if rule is None:
        raise DomainError("No such online evaluation rule on this prompt.", code="online_rule_not_found")
    return rule


def rule_update(*, prompt, rule_id, user, changes: dict) -> OnlineEvalRule:
    """Change a rule's rate, filter, evaluator or enabled flag."""
    rule = rule_get(prompt=prompt, rule_id=rule_id)
    if "evaluator" in changes:
        rule.evaluator = _evaluator(user, changes["evaluator"])
        rule.key = rule.evaluator["key"]
    if "version" in changes:
        rule.version = _version(prompt, changes["version"])
    for name in ("sample_rate", "label", "enabled"):
        if name in changes:
            setattr(rule, name, changes[name])
    rule.save()
    _audit(rule, user, "online_eval.changed")
    return rule


def rule_delete(*, prompt, rule_id, user) -> None:
    """Delete a rule and its scores (disable it to keep them)."""
    rule = rule_get(prompt=prompt, rule_id=rule_id)
    _audit(rule, user, "online_eval.deleted")
    rule.delete()


def rules_for(prompt_ids) -> list[OnlineEvalRule]:
    """The enabled rules of these prompts, with a rate above 0."""
    return list(OnlineEvalRule.objects.filter(prompt_id__in=prompt_ids, enabled=True, sample_rate__gt=0))


def count(rule_id: int, **counts: int) -> None:
    """Add to the rule's counters of this minute."""
    minute = datetime.datetime.now(datetime.UTC).replace(second=0, microsecond=0)
    OnlineCount.objects.get_or_create(rule_id=rule_id, minute=minute)
    OnlineCount.objects.filter(rule_id=rule_id, minute=minute).update(
        **{name: F(name) + n for name, n in counts.items()})


def rule_counts(rule: OnlineEvalRule, *, since: datetime.datetime) -> dict:
    """The rule's counters summed since `since`."""
    totals = dict.fromkeys(("sampled", "skipped", "scored", "failed", "lost"), 0)
    for row in OnlineCount.objects.filter(rule=rule, minute__gte=since).values(*totals):
        for name in totals:
            totals[name] += row[name]
    return totals


def _scores(version_id, since, until):
    return OnlineScore.objects.filter(prompt_version_id=version_id, generated_at__gte=since,
                                      generated_at__lt=until, score__isnull=False)


def version_score_samples(*, version_id, since: datetime.datetime, until: datetime.datetime
                          ) -> dict[str, list[float]]:
    """Per evaluator key, the online scores of the version's generations in
    since..until (one per scored generation, oldest first)."""
    out: dict[str, list[float]] = {}
    for key, score in _scores(version_id, since, until).order_by("generated_at", "id").values_list(
            "key", "score"):
        out.setdefault(key, []).append(score)
    return out


def _figures(scores: list[float], passes: list[bool]) -> dict:
    return {"count": len(scores), "mean": statistics.fmean(scores) if scores else None,
            "ci95": list(bootstrap_ci(scores)) if scores else None,
            "pass_rate": sum(passes) / len(passes) if passes else None,
            "pass_rate_ci95": list(bootstrap_ci([float(p) for p in passes])) if passes else None}


def version_online_figures(*, version_id, since: datetime.datetime, until: datetime.datetime,
                           bucket: str = "hour") -> dict:
    """Per evaluator key: count, mean score and its 95% interval, pass rate,
    how many could not be scored, and the same per time bucket ("hour" or "day")."""
    rows = OnlineScore.objects.filter(prompt_version_id=version_id, generated_at__gte=since,
                                      generated_at__lt=until).order_by("generated_at", "id")
    grouped: dict[str, dict] = {}
    for key, score, passed, at in rows.values_list("key", "score", "passed", "generated_at"):
        entry = grouped.setdefault(key, {"scores": [], "passes": [], "failed": 0, "buckets": {}})
        if score is None:
            entry["failed"] += 1
            continue
        start = at.replace(minute=0, second=0, microsecond=0)
        if bucket == "day":
            start = start.replace(hour=0)
        entry["scores"].append(score)
        entry["passes"].append(bool(passed))
        cell = entry["buckets"].setdefault(start, ([], []))
        cell[0].append(score)
        cell[1].append(bool(passed))
    return {key: {**_figures(e["scores"], e["passes"]), "failed": e["failed"],
                  "buckets": [{"at": at, "count": len(s), "mean": statistics.fmean(s),
                               "pass_rate": sum(p) / len(p)} for at, (s, p) in sorted(e["buckets"].items())]}
            for key, e in sorted(grouped.items())}
