"""Middleware every request passes: a request id, and a clear 503 when a
backing service is down."""

from __future__ import annotations

import contextvars
import re
import uuid

from .errors import service_unavailable_response

_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
# A client-supplied id is kept only if it is short and plain (it ends up in logs and JSON).
_REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


class ServiceUnavailableMiddleware:
    """Turn an unreachable database or cache into a 503 naming it, not a 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        return service_unavailable_response(request, exception)


class RequestIdMiddleware:
    """Takes X-Request-ID from the client (or makes one), exposes it to
    audit writes through a context variable, and echoes it in the response."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get("X-Request-ID", "")
        rid = incoming if _REQUEST_ID_RE.match(incoming) else uuid.uuid4().hex
        request.request_id = rid
        token = _request_id.set(rid)
        try:
            response = self.get_response(request)
        finally:
            _request_id.reset(token)
        response["X-Request-ID"] = rid
        return response


def current_request_id() -> str:
    return _request_id.get()
