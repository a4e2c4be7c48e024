"""Browser pages: signup (login/logout are Django's views), API keys."""

from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from config.errors import ApiError

from . import selectors, services


@require_http_methods(["GET", "POST"])
def signup(request):
    error = None
    if request.method == "POST":
        try:
            user = services.user_create(username=request.POST.get("username", ""),
                                        password=request.POST.get("password", ""),
                                        email=request.POST.get("email", ""))
        except ApiError as exc:
            error = {"field": exc.field, "message": str(exc.detail)}
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            return redirect(request.GET.get("next") or "home")
    return render(request, "accounts/signup.html",
                  {"error": error, "username": request.POST.get("username", "")},
                  status=400 if error else 200)


@login_required
def api_keys(request):
    return render(request, "accounts/api_keys.html",
                  {"keys": selectors.api_key_list(user=request.user)})
