"""A Django ASGI handler with a middleware chain of its own, and a router by path prefix.

Django's built-in middlewares (sessions, CSRF, auth, messages, security, ...)
run their hooks through ``sync_to_async`` even in an async chain: about a dozen
thread hops per request, which serialized the /v1 path on one core. The
OpenAI-compatible API needs none of their writes, so its requests go through an
``ApiHandler`` whose chain holds only async-native middleware (request id, 503
for a down service, a read-only session user for calls from our own pages).
Views, URL resolution, request and response objects are Django's own.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

from asgiref.sync import iscoroutinefunction
from django.core.exceptions import ImproperlyConfigured, RequestAborted
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpResponseBase
from django.utils.module_loading import import_string

# ASGI's parts, as django-stubs spells them.
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[Mapping[str, Any]]]
Send = Callable[[Mapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[Any]]


class ApiHandler(ASGIHandler):
    """``signal_free``: paths of async views whose Bearer calls touch no database
    or cache connection on the request's thread (keys come from the key cache or
    a run_db thread, which closes its own): those skip Django's request_started
    and request_finished signals, whose sync receivers (connection and cache
    clean-up) cost a thread hop each way per request. Session calls (the
    signed-in user is read on the request's thread) and every other path keep them."""

    # BaseHandler's chain, which django-stubs does not declare.
    _view_middleware: list[Any]
    _template_response_middleware: list[Any]

    def __init__(self, middleware: list[str], signal_free: tuple[str, ...] = ()) -> None:
        self.middleware_paths = list(middleware)
        self.signal_free = frozenset(signal_free)
        self._resolved: dict[str, Any] = {}  # signal_free path -> its ResolverMatch
        super().__init__()  # builds the chain through load_middleware

    def resolve_request(self, request: Any) -> Any:
        """Django's, kept for the signal_free paths: they are fixed, and walking the
        URL patterns was 5% of a serve process's CPU per /v1 call (py-spy)."""
        path = request.path_info
        match = self._resolved.get(path)
        if match is None or hasattr(request, "urlconf"):
            match = super().resolve_request(request)
            if path in self.signal_free and not hasattr(request, "urlconf"):
                self._resolved[path] = match
        request.resolver_match = match
        return match

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Django opens a ThreadSensitiveContext per request: a new thread for
        # each request's few sync calls (its request signals). The API path
        # runs no ORM code on the request's thread, so they share asgiref's
        # one sync thread instead.
        if scope["type"] != "http":
            raise ValueError(f"ApiHandler serves HTTP only, not {scope['type']}")
        if scope["path"] in self.signal_free and any(
                name == b"authorization" for name, _ in scope.get("headers", ())):
            await self._handle_without_signals(scope, receive, send)
        else:
            await self.handle(scope, receive, send)

    async def _handle_without_signals(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Django's ``handle`` less the request signals: the view runs as its own
        task beside a listener for the client's disconnect, which cancels it."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        try:
            request, error_response = self.create_request(scope, body_file)
            if request is None:  # then error_response is the answer
                await self.send_response(cast(HttpResponseBase, error_response), send)
                return

            async def respond() -> None:
                await self.send_response(await self.run_get_response(request), send)

            tasks = [asyncio.create_task(self.listen_for_disconnect(receive)),
                     asyncio.create_task(respond())]
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                if not task.done():
                    task.cancel()  # the view sees CancelledError (it stops its generation)
                with contextlib.suppress(asyncio.CancelledError, RequestAborted):
                    await task
        finally:
            body_file.close()

    def load_middleware(self, is_async: bool = False) -> None:
        self._view_middleware, self._template_response_middleware = [], []
        self._exception_middleware = []
        handler = convert_exception_to_response(self._get_response_async)  # type: ignore[attr-defined]  # private
        for path in reversed(self.middleware_paths):
            middleware = import_string(path)(handler)
            if not iscoroutinefunction(middleware):
                raise ImproperlyConfigured(f"{path} must be async-capable to run in the API chain")
            if hasattr(middleware, "process_exception"):
                # Django runs exception hooks synchronously (only on an exception).
                self._exception_middleware.append(self.adapt_method_mode(False, middleware.process_exception))
            handler = convert_exception_to_response(middleware)
        self._middleware_chain = handler


class PrefixRouter:
    """ASGI: HTTP requests whose path starts with a prefix go to its app, the rest to ``default``."""

    def __init__(self, routes: dict[str, ASGIApp], default: ASGIApp) -> None:
        self.routes = list(routes.items())
        self.default = default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> Any:
        path = scope.get("path", "")
        for prefix, app in self.routes:
            if path.startswith(prefix):
                return await app(scope, receive, send)
        return await self.default(scope, receive, send)
