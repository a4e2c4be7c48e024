"""The webhooks page: register an endpoint, see each endpoint's delivery log
(status, response code, attempts), redeliver, rotate the secret, remove.
Plain forms posting back to the page (CSRF-protected), no script needed."""

import functools

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_POST

from core.error_codes import DomainError
from sharing.access import access

from . import selectors, services
from .models import WebhookEvent


@login_required
def webhooks_page(request):
    endpoints = list(selectors.endpoint_list(owner=request.user))
    for endpoint in endpoints:
        endpoint.log = list(selectors.delivery_list(endpoint=endpoint)[:50])
    return render(request, "playground/webhooks.html", {
        "endpoints": endpoints, "events": WebhookEvent.choices,
        "prompts": request.user.prompts.order_by("title").only("id", "title"),
        "new_secret": request.session.pop("webhook_secret", None)})


def _form_post(action):
    """A form posting back to the webhooks page (signed in, POST only): a refused
    action (DomainError) shows as the page's error; either way, back to the page."""

    @login_required
    @require_POST
    @functools.wraps(action)
    def view(request, *args, **kwargs):
        try:
            action(request, *args, **kwargs)
        except DomainError as exc:
            messages.error(request, exc.message)
        return redirect("webhooks")

    return view


@_form_post
def webhook_create(request):
    prompt = None
    if request.POST.get("prompt"):
        prompt = access("prompt", user=request.user, pk=request.POST["prompt"], need="own", version_id=None)
    endpoint = services.endpoint_create(owner=request.user, url=request.POST.get("url", ""),
                                        events=request.POST.getlist("events"), prompt=prompt,
                                        description=request.POST.get("description", ""))
    request.session["webhook_secret"] = {"id": str(endpoint.pk), "secret": endpoint.secret}


@_form_post
def webhook_action(request, endpoint_id, action):
    endpoint = selectors.endpoint_get(owner=request.user, endpoint_id=endpoint_id)
    if action == "rotate":
        services.endpoint_secret_rotate(endpoint=endpoint)
        request.session["webhook_secret"] = {"id": str(endpoint.pk), "secret": endpoint.secret}
    elif action == "delete":
        services.endpoint_delete(endpoint=endpoint)
    else:
        raise DomainError("Unknown action.", code="invalid_request")


@_form_post
def webhook_redeliver(request, endpoint_id, delivery_id):
    endpoint = selectors.endpoint_get(owner=request.user, endpoint_id=endpoint_id)
    delivery = selectors.delivery_get(endpoint=endpoint, delivery_id=delivery_id)
    services.delivery_redeliver(delivery=delivery)
    messages.success(request, "Redelivery queued.")


urlpatterns = [
    path("settings/webhooks/", webhooks_page, name="webhooks"),
    path("settings/webhooks/new", webhook_create, name="webhook-create"),
    path("settings/webhooks/<uuid:endpoint_id>/<str:action>", webhook_action, name="webhook-action"),
    path("settings/webhooks/<uuid:endpoint_id>/deliveries/<uuid:delivery_id>/redeliver", webhook_redeliver,
         name="webhook-redeliver"),
]
