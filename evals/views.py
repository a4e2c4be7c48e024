"""Browser pages for evaluations: datasets and runs, the run's grid. Thin: access
checks, then a small JSON config for the JS module; everything else goes
through the REST API."""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render

from core.error_codes import DomainError
from sharing.kinds import Role

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
    try:
        dataset = access_dataset(user=request.user, dataset_id=dataset_id, need="view")
    except DomainError as exc:
        raise Http404("Dataset not found.") from exc
    return render(request, "evals/dataset.html", {
        "dataset": dataset, "is_owner": dataset.access_role == Role.OWNER, "config": {
            "page": "dataset", "dataset": {"id": str(dataset.pk), "name": dataset.name},
            "apiBase": f"/api/datasets/{dataset.pk}",  # the share dialog's
            "canEdit": dataset.access_role >= Role.EDITOR}})


@login_required
def run_page(request, run_id):
    try:
        run = access_run(user=request.user, run_id=run_id)
    except DomainError as exc:
        raise Http404("Run not found.") from exc
    return render(request, "evals/run.html", {"run": run, "config": {"page": "run", "run": str(run.pk)}})
