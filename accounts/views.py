"""Browser pages: signup (login/logout are Django's views). The API keys page,
which shows gateway usage and limits, is inference_client.pages."""

from django.contrib.auth import login
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from core.error_codes import DomainError

from . import services
from .throttling import check_signup_allowed


def safe_next(request) -> str | None:
    """`?next=` when it points to this site (as Django's LoginView checks it), else None."""
    target = request.POST.get("next") or request.GET.get("next")
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                                  require_https=request.is_secure()):
        return target
    return None


@require_http_methods(["GET", "POST"])
def signup(request):
    error, status, headers = None, 200, {}
    if request.method == "POST":
        try:
            check_signup_allowed(request)
            user = services.user_create(username=request.POST.get("username", ""),
                                        password=request.POST.get("password", ""),
                                        email=request.POST.get("email", ""))
        except DomainError as exc:
            error = {"field": exc.field, "message": exc.message}
            status, headers = exc.status, exc.headers
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            return redirect(safe_next(request) or "home")
    response = render(request, "accounts/signup.html",
                      {"error": error, "username": request.POST.get("username", "")}, status=status)
    for name, value in headers.items():  # Retry-After of a throttled signup
        response[name] = value
    return response
