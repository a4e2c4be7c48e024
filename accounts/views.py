"""Browser pages: signup (login/logout are Django's views), API keys."""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from config.errors import ApiError
from inference_client.selectors import key_rate_limits, usage_by_key, usage_summary

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
    """Keys with their usage over the last 24 h and what is left of their
    per-minute rate limits right now (read from the live buckets)."""
    since = timezone.now() - timedelta(hours=24)
    keys = list(selectors.api_key_list(user=request.user))
    usage = usage_by_key(user=request.user, since=since)
    limits = key_rate_limits(keys=[k for k in keys if k.is_active])
    for key in keys:
        key.usage_24h = usage.get(key.pk, {"requests": 0, "tokens": 0})
        key.limits_now = limits.get(key.pk) if limits is not None else None
    tiers = [{"name": name, **values} for name, values in settings.RATE_LIMITS.items()]
    return render(request, "accounts/api_keys.html", {
        "keys": keys,
        "summary": usage_summary(user=request.user, since=since),
        "tiers": tiers,
        "limits_enforced": limits is not None,
        "config": {"tiers": {t["name"]: t for t in tiers}, "limitsEnforced": limits is not None},
    })
