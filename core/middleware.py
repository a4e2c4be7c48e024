"""Middleware of our own: a request id, a clear 503 when a backing service is
down, and (for the API chain, see core/asgi.py) a read-only session user.
All are async-capable, so an async chain stays on the event loop."""

from __future__ import annotations

import contextvars
import re
import uuid
from collections.abc import Callable
from functools import partial
from importlib import import_module
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.contrib.auth.middleware import auser, get_user
from django.http import HttpRequest, HttpResponseBase
from django.utils.functional import SimpleLazyObject

from .errors import service_unavailable_response

_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
# A client-supplied id is kept only if it is short and plain (it ends up in logs and JSON).
REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")

# The next handler: a response, or (in an async chain) an awaitable of one.
GetResponse = Callable[[HttpRequest], Any]


class _Middleware:
    """Sync and async capable: under ASGI, an async chain stays on the event
    loop instead of hopping to a thread at each sync-only middleware."""

    sync_capable = async_capable = True

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._acall(request)
        return self.get_response(request)

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        response: HttpResponseBase = await self.get_response(request)
        return response


class ServiceUnavailableMiddleware(_Middleware):
    """Turn an unreachable database or cache into a 503 naming it, not a 500."""

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponseBase | None:
        return service_unavailable_response(request, exception)


class RequestIdMiddleware(_Middleware):
    """Takes X-Request-ID from the client (or makes one), exposes it to
    audit writes through a context variable, and echoes it in the response."""

    def __call__(self, request: Any) -> Any:
        if self.is_async:
            return self._acall(request)
        token = self._enter(request)
        try:
            response = self.get_response(request)
        finally:
            _request_id.reset(token)
        response["X-Request-ID"] = request.request_id
        return response

    async def _acall(self, request: Any) -> HttpResponseBase:
        token = self._enter(request)
        try:
            response: HttpResponseBase = await self.get_response(request)
        finally:
            _request_id.reset(token)
        response["X-Request-ID"] = request.request_id
        return response

    @staticmethod
    def _enter(request: Any) -> contextvars.Token[str]:
        incoming = request.META.get("HTTP_X_REQUEST_ID", "")
        request.request_id = incoming if REQUEST_ID_RE.fullmatch(incoming) else uuid.uuid4().hex
        return _request_id.set(request.request_id)


class SessionUserMiddleware(_Middleware):
    """For the API chain: ``request.session`` and ``request.user`` / ``auser``
    as SessionMiddleware + AuthenticationMiddleware set them, loaded lazily
    (a Bearer call never touches the session) and read-only: nothing on the
    API path writes the session, so there is no response hook."""

    def __init__(self, get_response: GetResponse) -> None:
        super().__init__(get_response)
        self.store = import_module(settings.SESSION_ENGINE).SessionStore

    async def _acall(self, request: Any) -> HttpResponseBase:
        request.session = self.store(request.COOKIES.get(settings.SESSION_COOKIE_NAME))
        request.user = SimpleLazyObject(lambda: get_user(request))
        request.auser = partial(auser, request)
        response: HttpResponseBase = await self.get_response(request)
        return response


def current_request_id() -> str:
    return _request_id.get()
