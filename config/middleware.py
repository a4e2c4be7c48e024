"""Turn an unreachable backing service into a clear 503 instead of a 500."""

import logging

from django.db import InterfaceError as DbInterfaceError
from django.db import OperationalError as DbOperationalError
from django.http import HttpResponse
from django.utils.html import escape

from .errors import is_api_path, json_error

logger = logging.getLogger(__name__)

try:  # redis is optional in the embedded default
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError:  # pragma: no cover
    RedisConnectionError = RedisTimeoutError = ()


def _service_for(exc: Exception) -> str | None:
    if isinstance(exc, DbOperationalError | DbInterfaceError):
        return "database"
    if RedisConnectionError and isinstance(exc, RedisConnectionError | RedisTimeoutError):
        return "cache"
    return None


class ServiceUnavailableMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        return service_unavailable_response(request, exception)


def service_unavailable_response(request, exception: Exception) -> HttpResponse | None:
    service = _service_for(exception)
    if service is None:
        return None
    logger.error("%s unavailable: %s", service, exception)
    cause = f"{exception.__class__.__name__}: {exception}".strip()
    message = f"The {service} is unavailable ({cause}); try again shortly."
    headers = {"Retry-After": "5"}
    if is_api_path(request.path):
        return json_error(f"{service}_unavailable", message, 503, headers=headers)
    return HttpResponse(f"<h1>Service unavailable</h1><p>{escape(message)}</p>", status=503,
                        headers=headers)
