"""Throttles on account creation and login, per client address (core/clientip.py).

- Login: django-axes counts failed logins (in Redis, else the database) per
  username and address, and per address; past LOGIN_FAILURE_LIMIT the login
  page, the admin's and every `authenticate()` refuse for LOGIN_LOCKOUT_S with
  a 429 and Retry-After (`lockout_response`).
- Signup: at most SIGNUP_LIMIT new accounts per address per SIGNUP_WINDOW_S,
  on the page and the API alike (`check_signup_allowed`); each is its own quota.
"""

from __future__ import annotations

from django.conf import settings
from django.core.cache import cache
from django.shortcuts import render

from core.clientip import client_ip
from core.error_codes import DomainError
from core.errors import is_api_path, json_error

LOGIN_LOCKED_MESSAGE = "Too many failed logins from this address; try again in {minutes} minutes."


def lockout_response(request, original_response=None, credentials=None):
    """What a locked-out login gets (AXES_LOCKOUT_CALLABLE): a 429 with Retry-After."""
    retry = int(settings.LOGIN_LOCKOUT_S)
    message = LOGIN_LOCKED_MESSAGE.format(minutes=max(1, retry // 60))
    headers = {"Retry-After": str(retry)}
    if is_api_path(request.path) or "application/json" in request.headers.get("Accept", ""):
        return json_error("too_many_login_attempts", message, headers=headers, retry_after=retry)
    response = render(request, "accounts/login.html", {"locked": message}, status=429)
    response["Retry-After"] = str(retry)
    return response


def check_signup_allowed(request) -> None:
    """Counts one signup attempt from the client's address; 429 past SIGNUP_LIMIT."""
    key = f"signup-attempts:{client_ip(request.META) or 'unknown'}"
    window = settings.SIGNUP_WINDOW_S
    cache.add(key, 0, timeout=window)  # the window starts with the first attempt
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=window)
        count = 1
    if count > settings.SIGNUP_LIMIT:
        ttl = cache.ttl(key) if hasattr(cache, "ttl") else None  # django-redis knows the real TTL
        retry = max(1, int(ttl)) if ttl else window
        raise DomainError(f"Too many new accounts from this address; try again in {max(1, retry // 60)} "
                          "minutes.", code="too_many_signups",
                          headers={"Retry-After": str(retry)}, extra={"retry_after": retry})
