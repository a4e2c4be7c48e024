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

from core.errors import page_not_found
from inference_protocol.cards import generating_cards
from sharing.kinds import Role

from . import selectors, services
from .actions import prompt_actions
from .api_runs import runs_first_page
from .permissions import access_prompt, prompts_shared_with
from .runs import run_get
from .serializers import VersionSerializer

# Bodies larger than this load lazily in Range chunks and render virtualised.
LAZY_BODY_BYTES = 1024 * 1024


def _access_or_404(request, prompt_id, need):
    with page_not_found("Prompt"):
        return access_prompt(user=request.user, prompt_id=prompt_id, need=need)


def _role_context(request, prompt) -> dict:
    """What the role may do (playground.actions) and, for a prompt shared with the caller, by whom."""
    role = Role(prompt.access_role)
    return {"actions": prompt_actions(prompt, user=request.user), "role": role.name.lower(),
            "shared_by": None if role == Role.OWNER else prompt.owner.get_username()}


def _runs_url(prompt) -> str:
    return f"/api/prompts/{prompt.pk}/runs" if prompt else "/api/playground/runs"


def _page_config(prompt, **extra) -> dict:
    """The page's config; prompt None: the caller's scratch playground."""
    return {
        "prompt": {"id": str(prompt.pk), "title": prompt.title} if prompt else None,
        # The caller's role as access_prompt decided it ("owner", "editor", ...):
        # pages show owner-only tools (the share dialog) from this, never by re-checking.
        "role": Role(prompt.access_role).name.lower() if prompt else "owner",
        "apiBase": f"/api/prompts/{prompt.pk}" if prompt else None,
        "runUrl": f"/api/prompts/{prompt.pk}/run" if prompt else "/api/playground/run",
        "runsUrl": _runs_url(prompt),
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
    prompts = list(selectors.prompt_list(user=request.user, search=query).select_related("owner")[:200])
    # Each prompt shared with the caller is badged with who shared it and the caller's role.
    editor_of = dict(prompts_shared_with(user=request.user).filter(pk__in=[p.pk for p in prompts])
                     .values_list("pk", "is_editor"))
    for p in prompts:
        p.shared_role = None if p.pk not in editor_of else ("editor" if editor_of[p.pk] else "viewer")
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
        version = selectors.version_list(prompt=prompt).order_by("-number").first()
    else:
        with page_not_found("Version"):
            version = selectors.version_get(prompt=prompt, version_id=version_id)
    version_id = str(version.pk) if version else None
    # The version rides in the page (as GET .../versions/<id> answers it): one round trip fewer.
    initial = VersionSerializer(version, context={"with_body": True}).data if version else None
    context = _role_context(request, prompt)
    return render(request, "playground/playground.html", {
        "prompt": prompt,
        "is_owner": prompt.access_role == Role.OWNER,
        **context,
        "config": _page_config(prompt, versionId=version_id, version=initial, runId=run_id,
                               actions=context["actions"],
                               runs=runs_first_page(request, prompt_id=prompt.pk, path=_runs_url(prompt))),
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
        "prompt": None, "is_owner": True, "config": _page_config(
            None, versionId=None, runId=run_id,
            runs=runs_first_page(request, prompt_id=None, path=_runs_url(None)))})


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
    return render(request, "playground/history.html", {
        "prompt": prompt,
        "is_owner": prompt.access_role == Role.OWNER,
        **_role_context(request, prompt),
        # user: the page offers reviews to decide only on requests someone else made.
        "config": _page_config(prompt, playgroundUrl=f"/prompts/{prompt.pk}/",
                               user=request.user.get_username()),
    })


@login_required
def shared_with_me_page(request):
    prompts = prompts_shared_with(user=request.user).order_by("-updated_at")[:200]
    return render(request, "playground/shared_with_me.html", {"prompts": prompts})
