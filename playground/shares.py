"""Prompts as a kind of shared object (sharing.kinds): the rules of their
access, what a share changes (webhooks), and the page a prompt's link opens."""

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.shortcuts import render

from core.error_codes import DomainError
from sharing import access
from sharing.kinds import Role, SubjectKind, register
from webhooks.services import webhook_emit

from .actions import prompt_actions
from .bodies import body_text
from .models import Prompt, PromptVersion
from .templating import template_variables


def _not_found() -> DomainError:
    return DomainError("Prompt not found.", code="prompt_not_found")


def _emit(prompt, event: str, data: dict) -> None:
    webhook_emit(prompt=prompt, event=event, data=data)


def prompt_link_page(request, link, token: str, client_addr: str):
    """The prompt read-only, the link's pinned version or the newest one, with
    the actions of the holder's role (playground.actions): a signed-in holder
    runs and forks it here; a signed-out one copies and exports it."""
    prompt = access.access("prompt", user=request.user, pk=link.prompt_id, need="view", share_token=token,
                           client_addr=client_addr, version_id=link.version_id or access.ALL_VERSIONS)
    versions = PromptVersion.objects.filter(prompt=prompt).defer("payload_inline")
    version = (versions.filter(pk=link.version_id) if link.version_id
               else versions.order_by("-number")).first()
    body = None
    if version is not None and version.body_size <= settings.PROMPT_INLINE_MAX_BYTES:
        body = body_text(version)
    actions = prompt_actions(prompt, user=request.user) if version is not None else []
    signed_out = not request.user.is_authenticated
    return render(request, "playground/share_link.html", {
        "prompt": prompt, "version": version, "body": body, "link": link, "token": token,
        "pinned": link.version_id is not None, "actions": actions,
        "variables": template_variables(version.system, *(m.get("content") or "" for m in version.messages),
                                        body) if body is not None else [],
        "sign_in_url": redirect_to_login(request.get_full_path())["Location"] if signed_out else None,
        "config": {"prompt": {"id": str(prompt.pk), "title": prompt.title},
                   "apiBase": f"/api/prompts/{prompt.pk}", "versionId": str(version.pk) if version else None,
                   "shareToken": token, "actions": actions},
    })


PROMPT = register(SubjectKind(
    name="prompt", model=Prompt, not_found=_not_found,
    # Viewers and link holders read, run and fork; editors also create versions
    # and move labels; only the owner shares, grants, revokes and transfers.
    needs={"view": Role.LINK, "fork": Role.LINK, "edit": Role.EDITOR, "own": Role.OWNER},
    read_only="Your access to this prompt is read-only.",
    version_model=PromptVersion,
    signed_in_needs={"fork": "Sign in to fork a prompt into your library."},
    changed=_emit, link_page=prompt_link_page,
))
