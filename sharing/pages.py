"""Pages: the share-link page (/s/<token>) and "shared with me".
Access is decided by playground.permissions, as for the API."""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.shortcuts import render
from django.urls import path

from core.error_codes import DomainError
from evals.permissions import access_dataset
from playground.bodies import body_text
from playground.models import PromptVersion
from playground.permissions import access_prompt, client_address, prompts_shared_with

from .models import LinkMode
from .tokens import link_resolve


def _error_page(request, exc: DomainError):
    response = render(request, "playground/share_error.html",
                      {"status": exc.status, "message": exc.message}, status=exc.status)
    for name, value in exc.headers.items():
        response[name] = value
    return response


def _private(response):
    # The token is in the URL: keep it out of Referer headers and shared caches.
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "no-store"
    return response


def share_link_page(request, token: str):
    """Public links show the prompt (or the dataset's newest rows) read-only; login links send signed-out
    visitors to log in and back here. Malformed, unknown, expired and revoked
    tokens all get the same 404."""
    addr = client_address(request)
    try:
        link = link_resolve(token=token, client_addr=addr)
        if link is not None and link.mode == LinkMode.LOGIN and not request.user.is_authenticated:
            return _private(redirect_to_login(request.get_full_path()))
        if link is None:
            raise DomainError("This link does not exist or is no longer shared.", code="link_not_found")
        if link.dataset_id is not None:
            return _private(_dataset_page(request, link, token, addr))
        prompt = access_prompt(user=request.user, prompt_id=link.prompt_id, need="view", share_token=token,
                               client_addr=addr, version_id=link.version_id or "all")
    except DomainError as exc:
        return _private(_error_page(request, exc))
    versions = PromptVersion.objects.filter(prompt=prompt).defer("payload_inline")
    # A pinned link shows its version; otherwise the newest one.
    version = (versions.filter(pk=link.version_id) if link.version_id
               else versions.order_by("-number")).first()
    body = None
    if version is not None and version.body_size <= settings.PROMPT_INLINE_MAX_BYTES:
        body = body_text(version)
    return _private(render(request, "playground/share_link.html", {
        "prompt": prompt, "version": version, "body": body, "link": link, "token": token,
        "pinned": link.version_id is not None,
    }))


# Rows a dataset's link page shows; the rest through the API with the token.
SHARED_DATASET_ROWS = 200


def _dataset_page(request, link, token: str, addr: str):
    dataset = access_dataset(user=request.user, dataset_id=link.dataset_id, need="read", share_token=token,
                             client_addr=addr)
    version = dataset.versions.order_by("-number").first()
    rows = list(version.rows.order_by("index")[:SHARED_DATASET_ROWS]) if version else []
    return render(request, "evals/dataset_shared.html",
                  {"dataset": dataset, "version": version, "rows": rows, "link": link})


@login_required
def shared_with_me_page(request):
    prompts = prompts_shared_with(user=request.user).order_by("-updated_at")[:200]
    return render(request, "playground/shared_with_me.html", {"prompts": prompts})


urlpatterns = [
    path("s/<str:token>", share_link_page, name="share-link"),
    path("prompts/shared/", shared_with_me_page, name="shared-with-me"),
]
