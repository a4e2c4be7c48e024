"""Online evaluation's side of the log (evals.online): as the usage writer
stores a batch, the enabled rules of its prompts pick their share of the new
generations (a hash per rule and generation) and queue their scoring, a task
(generations.online_score) per rule and ONLINE_EVAL_BATCH generations, on
ONLINE_EVAL_QUEUE; with no broker (the embedded default) on a thread of this
process (past EMBEDDED_BACKLOG waiting tasks, counted as lost). The writer
never waits for it: a publish that fails (the broker away) counts the
generations as lost, and for ONLINE_EVAL_BROKER_BACKOFF_S the next batches'
are counted lost without trying."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from celery import current_app
from django.conf import settings
from django.db import close_old_connections

from evals.online import count, rules_for, sampled
from evals.online_score import score_generations

from .models import Generation
from .selectors import generation_output

logger = logging.getLogger(__name__)
TASK = "generations.online_score"
_embedded = ThreadPoolExecutor(max_workers=1, thread_name_prefix="online-eval")
EMBEDDED_BACKLOG = 100  # tasks waiting for the embedded thread; past it, counted as lost
_pending = 0
_down_until = 0.0
_lock = threading.Lock()


def _matches(rule, g: dict) -> bool:
    return (str(rule.prompt_id) == str(g["prompt_id"])
            and (not rule.label or rule.label == g["label"])
            and (rule.version_id is None or str(rule.version_id) == str(g["version_id"])))


def online_sample(rows: list[Generation]) -> None:
    """Pick and queue the sampled generations among those just stored: one
    query for the rules of their prompts, and one for their ids when there are any."""
    rules = rules_for({g.prompt_id for g in rows})
    if not rules:
        return
    # bulk_create(ignore_conflicts) sets no ids: read them back.
    stored = list(Generation.objects.filter(request_id__in=[g.request_id for g in rows]).values(
        "id", "prompt_id", "version_id", "label", "status"))
    for rule in rules:
        picked = [g for g in stored if _matches(rule, g) and sampled(rule.pk, g["id"], rule.sample_rate)]
        if not picked:
            continue
        ok = [g["id"] for g in picked if g["status"] == "ok"]
        count(rule.pk, sampled=len(picked), skipped=len(picked) - len(ok))
        size = max(1, settings.ONLINE_EVAL_BATCH)
        for start in range(0, len(ok), size):
            _queue(rule.pk, ok[start:start + size])


def _queue(rule_id: int, ids: list[int]) -> None:
    global _down_until, _pending
    if not settings.CELERY_BROKER_URL:
        with _lock:
            full = _pending >= EMBEDDED_BACKLOG
            _pending += 0 if full else 1
        if full:  # a flood the one thread cannot keep up with: shed it, counted
            count(rule_id, lost=len(ids))
        else:
            _embedded.submit(_run_embedded, rule_id, ids)
        return
    if time.monotonic() < _down_until:
        count(rule_id, lost=len(ids))
        return
    try:
        current_app.send_task(TASK, args=[rule_id, ids], queue=settings.ONLINE_EVAL_QUEUE, ignore_result=True)
    except Exception as exc:  # the broker away: the writer goes on, the loss is counted
        logger.warning("online scoring of %d generations not queued: %r", len(ids), exc)
        with _lock:
            _down_until = time.monotonic() + settings.ONLINE_EVAL_BROKER_BACKOFF_S
        count(rule_id, lost=len(ids))


def _run_embedded(rule_id: int, ids: list[int]) -> None:
    global _pending
    try:
        online_score(rule_id, ids)
    except Exception:  # logged; the generations stay unscored
        logger.exception("online scoring of rule %s failed", rule_id)
    finally:
        close_old_connections()
        with _lock:
            _pending -= 1


def online_score(rule_id: int, ids: list[int]) -> int:
    """Score the rule's sampled generations (those still in the log)."""
    generations = [{"id": g.pk, "version_id": g.version_id, "output": generation_output(g),
                    "variables": g.variables, "created_at": g.created_at}
                   for g in Generation.objects.filter(pk__in=ids, status="ok").order_by("id")]
    return score_generations(rule_id, generations)
