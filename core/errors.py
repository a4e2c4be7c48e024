"""One error shape for every API response:

    {"error": {"code": "...", "message": "...", "field": "...", "type": "...", "param": "..."}}

`code`, `message`, `field` are ours; `type` and `param` repeat them the way
OpenAI's SDKs read errors, so /v1 clients get the shape they expect.

Services raise core.error_codes.DomainError; this module is the one place that
turns it into HTTP (the DRF exception handler, json_error for plain views and
the /v1 gateway) or into a websocket error frame (error_frame).
"""

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import InterfaceError as DbInterfaceError
from django.db import OperationalError as DbOperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils.html import escape
from django.views.decorators.csrf import csrf_exempt
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_default_handler
from rest_framework.views import set_rollback

from core.error_codes import CODES, DomainError

logger = logging.getLogger(__name__)


_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
          404: "not_found_error", 409: "conflict_error", 413: "invalid_request_error",
          422: "invalid_request_error", 429: "rate_limit_error"}


def error_body(code: str, message: str, status_code: int, field: str | None = None,
               **extra: Any) -> dict[str, Any]:
    body = {
        "code": code,
        "message": message,
        "field": field,
        "type": _TYPES.get(status_code, "server_error" if status_code >= 500 else "api_error"),
        "param": field,
    }
    body.update(extra)
    return {"error": body}


def domain_error_body(exc: DomainError) -> dict[str, Any]:
    return error_body(exc.code, exc.message, exc.status, exc.field, **exc.extra)


def domain_error_response(exc: DomainError) -> JsonResponse:
    return JsonResponse(domain_error_body(exc), status=exc.status, headers=exc.headers)


def error_frame(exc: DomainError, **extra: Any) -> dict[str, Any]:
    """A websocket's error frame: the body's code, message and fields, flat."""
    frame = {"type": "error", "code": exc.code, "message": exc.message, "field": exc.field,
             **exc.extra, **extra}
    return {k: v for k, v in frame.items() if v is not None}


def _first_validation_error(detail: Any, prefix: str = "") -> tuple[str | None, str, str]:
    """Walk DRF's nested ValidationError detail to the first message; returns
    (dotted field, message, code)."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = prefix if key == "non_field_errors" else (f"{prefix}.{key}" if prefix else str(key))
            return _first_validation_error(value, name)
    if isinstance(detail, list) and detail:
        return _first_validation_error(detail[0], prefix)
    code = getattr(detail, "code", "invalid") or "invalid"
    return (prefix or None), str(detail), code


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DomainError):
        set_rollback()
        return Response(domain_error_body(exc), status=exc.status, headers=exc.headers)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_default_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return None  # not an API exception: Django's 500 handler (JSON for API paths)

    if isinstance(exc, exceptions.ValidationError):
        field, message, code = _first_validation_error(exc.detail)
        response.data = error_body(registered(code, "invalid_request"),
                                   message if not field else f"{field}: {message}",
                                   response.status_code, field, details=exc.detail)
    else:
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else "error"
        response.data = error_body(registered(code, "error"), str(exc.detail), response.status_code)
    return response


def registered(code: str, fallback: str) -> str:
    """A code DRF made (its exceptions', its fields' and validators') as the answer
    sends it: itself where core.error_codes registers it, else `fallback` (DRF's
    generic `invalid` goes out as invalid_request)."""
    return code if code in CODES else fallback


def json_error(code: str, message: str | None = None, *, field: str | None = None,
               headers: dict[str, str] | None = None, **extra: Any) -> JsonResponse:
    """A plain view's error response: the status is the code's (core.error_codes)."""
    return domain_error_response(DomainError(message, code=code, field=field, extra=extra, headers=headers))


@csrf_exempt  # an unknown route is a 404 for every method, never a CSRF page first
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    return json_error("not_found", f"No API route matches {request.path}.")


def is_api_path(path: str) -> bool:
    return path.startswith(("/api/", "/v1/"))


def handler404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if is_api_path(request.path):
        return api_not_found(request)
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)


def handler500(request: HttpRequest) -> HttpResponse:
    # Called inside Django's except block: a down service is a 503, not a 500.
    exc = sys.exc_info()[1]
    if exc is not None and (response := service_unavailable_response(request, exc)):
        return response
    if is_api_path(request.path):
        return json_error("server_error")
    from django.views.defaults import server_error

    return server_error(request)


def _service_for(exc: BaseException) -> str | None:
    if isinstance(exc, DbOperationalError | DbInterfaceError):
        return "database"
    if isinstance(exc, RedisConnectionError | RedisTimeoutError):
        return "cache"
    return None


def service_unavailable_response(request: HttpRequest, exception: BaseException) -> HttpResponse | None:
    """A 503 naming the backing service that is down, or None for other errors."""
    service = _service_for(exception)
    if service is None:
        return None
    code = "database_unavailable" if service == "database" else "cache_unavailable"
    logger.error("%s unavailable: %s", service, exception)
    cause = f"{exception.__class__.__name__}: {exception}".strip()
    message = f"The {service} is unavailable ({cause}); try again shortly."
    headers = {"Retry-After": "5"}
    if is_api_path(request.path):
        return json_error(code, message, headers=headers)
    return HttpResponse(f"<h1>Service unavailable</h1><p>{escape(message)}</p>", status=503,
                        headers=headers)


@contextmanager
def page_not_found(what: str) -> Iterator[None]:
    """A page's lookup: a DomainError (absent, or not the user's to see) becomes
    Django's 404 page, the same for both, so a stranger learns nothing."""
    try:
        yield
    except DomainError as exc:
        raise Http404(f"{what} not found.") from exc
