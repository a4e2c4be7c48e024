"""Browser pages for evaluations: datasets and runs, the run's grid, a prompt's
online evaluation rules. Thin: access
checks, then a small JSON config for the JS module; everything else goes
through the REST API."""

import datetime
import json

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from core.errors import page_not_found
from playground.permissions import access_prompt
from sharing.kinds import Role

from .models import OnlineEvalRule
from .online import rule_counts
from .permissions import access_dataset, access_run, datasets_visible_to, runs_visible_to


@login_required
def evals_home(request):
    datasets = datasets_visible_to(user=request.user).select_related("owner")[:200]
    runs = (runs_visible_to(user=request.user).select_related("dataset_version__dataset", "owner")
            .order_by("-created_at")[:50])
    return render(request, "evals/home.html", {"datasets": datasets, "runs": runs,
                                               "config": {"page": "home"}})


@login_required
def dataset_page(request, dataset_id):
    with page_not_found("Dataset"):
        dataset = access_dataset(user=request.user, dataset_id=dataset_id, need="view")
    return render(request, "evals/dataset.html", {
        "dataset": dataset, "is_owner": dataset.access_role == Role.OWNER,
        "max_repeats": settings.EVAL_RUN_MAX_REPEATS, "config": {
            "page": "dataset", "dataset": {"id": str(dataset.pk), "name": dataset.name},
            "apiBase": f"/api/datasets/{dataset.pk}",  # the share dialog's
            "canEdit": dataset.access_role >= Role.EDITOR, "isOwner": dataset.access_role == Role.OWNER,
            "username": request.user.username}})


@login_required
def run_page(request, run_id):
    with page_not_found("Run"):
        run = access_run(user=request.user, run_id=run_id)
    dataset = run.dataset_version.dataset
    may_delete = run.owner_id == request.user.pk or dataset.owner_id == request.user.pk
    return render(request, "evals/run.html", {"run": run, "config": {
        "page": "run", "run": str(run.pk), "mayDelete": may_delete,
        "datasetUrl": reverse("evals-dataset", args=[dataset.pk])}})


@login_required
def online_evals_page(request, prompt_id):
    """A prompt's online evaluation rules (evals.online): each with its rate,
    filter, the last day's counters; editors add, pause and delete them."""
    with page_not_found("Prompt"):
        prompt = access_prompt(user=request.user, prompt_id=prompt_id, need="view")
    since = timezone.now() - datetime.timedelta(days=1)
    rules = [{"rule": rule, "counts": rule_counts(rule, since=since), "rate": f"{rule.sample_rate * 100:g}%",
              "args": json.dumps(rule.evaluator.get("args") or {}, ensure_ascii=False)}
             for rule in OnlineEvalRule.objects.filter(prompt=prompt).select_related("version")]
    versions = prompt.versions.order_by("-number").values("id", "number")[:200]
    can_edit = prompt.access_role >= Role.EDITOR
    return render(request, "evals/online.html", {
        "prompt": prompt, "rules": rules, "versions": versions, "can_edit": can_edit,
        "max_rules": settings.ONLINE_EVAL_MAX_RULES,
        "config": {"page": "online", "prompt": str(prompt.pk), "canEdit": can_edit}})
