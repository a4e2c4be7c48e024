"""Browser pages for the prompt library: list + create, the playground, history.

Pages are thin: they check access with `access_prompt` (the one access
function) and hand the JS modules a small JSON config; everything else goes
through the same REST API the SDKs use.
"""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from core.error_codes import DomainError
from core.errors import page_not_found
from inference_protocol.cards import generating_cards
from sharing.kinds import Role

from . import selectors, services
from .permissions import access_prompt, prompts_shared_with
from .runs import run_get

# Bodies larger than this load lazily in Range chunks and render virtualised.
LAZY_BODY_BYTES = 1024 * 1024


def _access_or_404(request, prompt_id, need):
    with page_not_found("Prompt"):
        return access_prompt(user=request.user, prompt_id=prompt_id, need=need)


def _page_config(prompt, **extra) -> dict:
    """The page's config; prompt None: the caller's scratch playground."""
    return {
        "prompt": {"id": str(prompt.pk), "title": prompt.title} if prompt else None,
        # The caller's role as access_prompt decided it ("owner", "editor", ...):
        # pages show owner-only tools (the share dialog) from this, never by re-checking.
        "role": Role(prompt.access_role).name.lower() if prompt else "owner",
        "apiBase": f"/api/prompts/{prompt.pk}" if prompt else None,
        "runUrl": f"/api/prompts/{prompt.pk}/run" if prompt else "/api/playground/run",
        "runsUrl": f"/api/prompts/{prompt.pk}/runs" if prompt else "/api/playground/runs",
        # The models a prompt may run on (they generate text), with their parameters and prices.
        "catalog": generating_cards(),
        "defaultModel": settings.DEFAULT_MODEL,
        "uploadThreshold": settings.PROMPT_INLINE_MAX_BYTES,
        "lazyBodyBytes": LAZY_BODY_BYTES,
        **extra,
    }


@login_required
@require_http_methods(["GET", "POST"])
def prompt_list(request):
    error, title = None, ""
    if request.method == "POST":
        title = request.POST.get("title", "").strip()
        if not title or len(title) > 200:
            error = "Give the prompt a title of 1 to 200 characters."
        else:
            prompt = services.prompt_create(owner=request.user, title=title,
                                            description=request.POST.get("description", "").strip())
            return redirect("prompt-playground", prompt_id=prompt.pk)
    query = request.GET.get("q", "").strip()
    prompts = selectors.prompt_list(user=request.user, search=query).select_related("owner")[:200]
    return render(request, "playground/prompt_list.html",
                  {"prompts": prompts, "q": query, "error": error, "title": title},
                  status=400 if error else 200)


@login_required
def playground(request, prompt_id):
    prompt = _access_or_404(request, prompt_id, "view")
    # ?run=<id> opens a run of the history (its permalink, /runs/<id>/, leads here).
    run_id = request.GET.get("run") or None
    if run_id is not None:
        with page_not_found("Run"):
            run = run_get(user=request.user, run_id=run_id)
        if run.prompt_id != prompt.pk:
            raise Http404("Run not found.")
        run_id = str(run.pk)
    # ?v=<id> opens that version (history's "edit from here" branches from it);
    # otherwise the newest version, the usual place to keep working.
    version_id = request.GET.get("v") or (str(run.version_id) if run_id and run.version_id else None)
    if version_id is None:
        newest = selectors.version_list(prompt=prompt).order_by("-number").first()
        version_id = str(newest.pk) if newest else None
    else:
        with page_not_found("Version"):
            version_id = str(selectors.version_get(prompt=prompt, version_id=version_id).pk)
    return render(request, "playground/playground.html", {
        "prompt": prompt,
        "is_owner": prompt.access_role == Role.OWNER,
        "config": _page_config(prompt, versionId=version_id, runId=run_id),
    })


@login_required
def scratch_playground(request):
    """/playground/: run prompts before naming one (the caller's scratch draft)."""
    run_id = request.GET.get("run") or None
    if run_id is not None:
        with page_not_found("Run"):
            run = run_get(user=request.user, run_id=run_id)
        if run.prompt_id is not None:
            raise Http404("Run not found.")
        run_id = str(run.pk)
    return render(request, "playground/playground.html", {
        "prompt": None, "is_owner": True, "config": _page_config(None, versionId=None, runId=run_id)})


@login_required
def run_permalink(request, run_id):
    """/runs/<id>/: the run on its prompt's page (a scratch run: on its author's
    scratch playground), for whoever may view it; else a 404."""
    with page_not_found("Run"):
        run = run_get(user=request.user, run_id=run_id)
    if run.prompt_id is None:
        return redirect(f"/playground/?run={run.pk}")
    return redirect(f"/prompts/{run.prompt_id}/?run={run.pk}")


@login_required
def history(request, prompt_id):
    prompt = _access_or_404(request, prompt_id, "view")
    from .protection import pending_list

    return render(request, "playground/history.html", {
        "prompt": prompt,
        "is_owner": prompt.access_role == Role.OWNER,
        "can_edit": prompt.access_role >= Role.EDITOR,
        "pending_moves": list(pending_list(prompt=prompt).select_related("from_version", "to_version")[:20]),
        "protected_labels": list(selectors.label_list(prompt=prompt).filter(protected=True)),
        "config": _page_config(prompt, playgroundUrl=f"/prompts/{prompt.pk}/"),
    })


@login_required
@require_http_methods(["POST"])
def pending_decide(request, prompt_id, pending_id, decision):
    """The history page's approve / reject buttons (a form post, then back)."""
    from django.contrib import messages

    from .move_checks import label_move_check
    from .protection import pending_decide as decide

    prompt = _access_or_404(request, prompt_id, "view")
    try:
        if decision not in ("approve", "reject"):
            raise DomainError("Unknown decision.", code="invalid_request")
        if prompt.access_role < Role.EDITOR:
            raise DomainError("Your access to this prompt is read-only.", code="forbidden")
        name = request.POST.get("label", "")

        def gate(p):
            label_move_check(prompt=prompt, name=name, user=request.user, candidate_id=p.to_version_id,
                             baseline_id=p.from_version_id, run_id=p.eval_run or None)

        decide(prompt=prompt, name=name, pending_id=pending_id, actor=request.user,
               approve=decision == "approve", reason=request.POST.get("reason", ""), gate=gate)
        messages.success(request, f"Move {decision}d.")
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("prompt-history", prompt_id=prompt.pk)


@login_required
def shared_with_me_page(request):
    prompts = prompts_shared_with(user=request.user).order_by("-updated_at")[:200]
    return render(request, "playground/shared_with_me.html", {"prompts": prompts})
