"""The share-link page (/s/<token>): the link's object read-only, as its kind's
`link_page` shows it. Access is decided by sharing.access, as for the API."""

from django.contrib.auth.views import redirect_to_login
from django.shortcuts import render
from django.urls import path

from core.error_codes import DomainError

from .access import client_address
from .kinds import KINDS
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
    """Public links show the object read-only; login links send signed-out
    visitors to log in and back here. Malformed, unknown, expired and revoked
    tokens all get the same 404."""
    addr = client_address(request)
    try:
        link = link_resolve(token=token, client_addr=addr)
        if link is not None and link.mode == LinkMode.LOGIN and not request.user.is_authenticated:
            return _private(redirect_to_login(request.get_full_path()))
        if link is None:
            raise DomainError("This link does not exist or is no longer shared.", code="link_not_found")
        kind = next(kind for kind in KINDS.values() if getattr(link, f"{kind.name}_id") is not None)
        return _private(kind.link_page(request, link, token, addr))
    except DomainError as exc:
        return _private(_error_page(request, exc))


urlpatterns = [
    path("s/<str:token>", share_link_page, name="share-link"),
]
