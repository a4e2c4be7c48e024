"""Browser pages: signup (login/logout are Django's views). The API keys page,
which shows gateway usage and limits, is inference_client.pages."""

from django.contrib.auth import login
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from core.errors import ApiError

from . import services


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
