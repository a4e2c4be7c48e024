"""Promptyard's Python client: prompts by label behind a bounded-staleness
cache (promptyard.cache), rendering, and runs through /v1/chat/completions."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from urllib.parse import quote

import httpx

from .cache import BoundedStalenessCache
from .errors import (
    ApiError,
    AuthenticationError,
    LabelNotFound,
    NotFound,
    PromptNotFound,
    PromptyardError,
    ServerUnavailable,
)
from .production import Call, Production
from .version import LabelValue, PromptVersion, choose, fallback_version, label_value, versions_of

DEFAULT_TTL = 60.0
DEFAULT_MAX_STALE = 300.0
DEFAULT_TIMEOUT = 5.0


def _error_from(response: httpx.Response, *, what: str) -> PromptyardError:
    try:
        error = response.json().get("error") or {}
    except (ValueError, AttributeError):
        error = {}
    code = error.get("code") or f"http_{response.status_code}"
    message = error.get("message") or f"{what}: HTTP {response.status_code}"
    status = response.status_code
    if status == 401:
        return AuthenticationError(message, code=code, status=status)
    if status >= 500 or status == 429 or (status == 404 and not error):
        # A 404 without our JSON error came from something in front of the server.
        return ServerUnavailable(message, code=code, status=status)
    if status == 404:
        kind = LabelNotFound if code == "label_not_found" else (
            PromptNotFound if code == "prompt_not_found" else NotFound)
        return kind(message, code=code, status=status)
    return ApiError(message, code=code, status=status)


# Outcomes of a fetch that the cache records (an answer) or counts (no answer).
_GONE = (NotFound, AuthenticationError)
_NO_ANSWER = (ServerUnavailable,)


def _transport_error(exc: httpx.TransportError) -> ServerUnavailable:
    kind = "timeout" if isinstance(exc, httpx.TimeoutException) else "connection_error"
    return ServerUnavailable(f"Promptyard did not answer: {exc!r}", code=kind)


def _label_path(prompt: str, label: str) -> str:
    return f"/api/prompts/{quote(str(prompt), safe='')}/labels/{quote(label, safe='')}"


def _sse_chunks(lines) -> Iterator[dict]:
    for line in lines:
        if line.startswith("data:"):
            data = line[5:].strip()
            if data == "[DONE]":
                return
            yield json.loads(data)


class _Base:
    def __init__(self, base_url: str, api_key: str, *, ttl: float = DEFAULT_TTL,
                 max_stale: float = DEFAULT_MAX_STALE, timeout: float = DEFAULT_TIMEOUT,
                 run_timeout: float = 120.0, clock: Callable[[], float] = time.monotonic):
        if not api_key:
            raise AuthenticationError("An API key is required (create one at /settings/api-keys/).",
                                      code="missing_api_key")
        self.base_url = base_url.rstrip("/")
        self.cache: BoundedStalenessCache[LabelValue] = BoundedStalenessCache(
            ttl=ttl, max_stale=max_stale, clock=clock)
        self.timeout = timeout
        self.run_timeout = run_timeout
        self._headers = {"Authorization": f"Bearer {api_key}", "User-Agent": "promptyard-python/0.1"}

    def _serve(self, plan, user):
        """The answer of a plan that needs no fetch, else None."""
        entry = plan.entry
        if plan.action == "fresh":
            if entry.gone is not None:
                raise entry.gone
            return choose(entry.value, user, source="cache")
        if plan.action == "stale":
            return choose(entry.value, user, source="stale")
        return None

    def _unavailable(self, exc, fallback, prompt, label):
        if fallback is not None:
            return fallback_version(fallback, prompt=prompt, label=label, error=exc, client=self)
        raise exc

    @property
    def production(self) -> Production:
        """Generations, version figures, online scores and regression alerts (promptyard.production)."""
        return Production(self)


class Promptyard(_Base):
    """A client for one server and key. Thread-safe; share one per process.

        py = Promptyard("https://promptyard.example", api_key)
        version = py.get_prompt(prompt_id, label="production", fallback="Summarise: {{text}}")
        reply = version.run({"text": doc})
    """

    is_async = False  # which of PromptVersion.run / arun goes through this client

    def __init__(self, base_url: str, api_key: str, *, ttl: float = DEFAULT_TTL,
                 max_stale: float = DEFAULT_MAX_STALE, timeout: float = DEFAULT_TIMEOUT,
                 run_timeout: float = 120.0, clock: Callable[[], float] = time.monotonic,
                 spawn: Callable[[Callable[[], None]], None] | None = None,
                 transport: httpx.BaseTransport | None = None):
        super().__init__(base_url, api_key, ttl=ttl, max_stale=max_stale, timeout=timeout,
                         run_timeout=run_timeout, clock=clock)
        self._http = httpx.Client(base_url=self.base_url, headers=self._headers, transport=transport)
        self._spawn = spawn or (lambda fn: threading.Thread(target=fn, daemon=True,
                                                            name="promptyard-refresh").start())

    def close(self) -> None:
        self._http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def get_prompt(self, prompt: str, label: str = "production", *, fallback=None,
                   user: str | None = None) -> PromptVersion:
        """The version `label` points at, under the cache contract (module
        promptyard.cache). Raises LabelNotFound / PromptNotFound / AuthenticationError
        when the server says so, ServerUnavailable when it cannot answer and there is
        neither a copy within the bound nor a `fallback` (a template string, a mapping
        with 'template' and optional 'system', 'model', 'variables', 'parameters',
        or a PromptVersion). A split label gives `user` its variant (the same one on
        every call, as the server picks it; random by weight without a user key)."""
        key = (str(prompt), label)
        plan = self.cache.plan(key)
        served = self._serve(plan, user)
        if served is not None:
            if plan.start_refresh:
                self._spawn(lambda: self._refresh(key))
            return served
        try:
            return choose(self._fetch_and_record(key), user, source="server")
        except _NO_ANSWER as exc:
            return self._unavailable(exc, fallback, str(prompt), label)

    def _refresh(self, key) -> None:
        try:
            self._fetch_and_record(key, refresh=True)
        except PromptyardError:
            pass  # recorded: the next get sees it
        except Exception:
            self.cache.failed(key, refresh=True)

    def _fetch_and_record(self, key, *, refresh: bool = False) -> LabelValue:
        at = self.cache.clock()
        try:
            version = self._fetch(*key)
        except _GONE as exc:
            self.cache.answered(key, at=at, gone=exc, refresh=refresh)
            raise
        except _NO_ANSWER:
            self.cache.failed(key, refresh=refresh)
            raise
        except BaseException:
            self.cache.failed(key, refresh=refresh)
            raise
        self.cache.answered(key, at=at, value=version, refresh=refresh)
        return version

    def _get(self, path: str) -> httpx.Response:
        try:
            response = self._http.get(path, timeout=self.timeout)
        except httpx.TransportError as exc:
            raise _transport_error(exc) from exc
        if response.status_code != 200:
            raise _error_from(response, what=f"GET {path}")
        return response

    def _call(self, call: Call, url: str | None = None) -> dict:
        try:
            response = self._http.request(call.method, url or call.path, params=None if url else call.params,
                                          json=call.body, timeout=self.timeout)
        except httpx.TransportError as exc:
            raise _transport_error(exc) from exc
        if not response.is_success:
            raise _error_from(response, what=f"{call.method} {call.path}")
        return _json(response)

    def _pages(self, call: Call) -> Iterator[dict]:
        page = self._call(call)
        while True:
            yield from page["results"]
            if not page.get("next"):
                return
            page = self._call(call, url=page["next"])

    def _fetch(self, prompt: str, label: str) -> LabelValue:
        data = _json(self._get(_label_path(prompt, label)))
        bodies = {}
        for v in versions_of(data):  # a large body is fetched from its own URL
            bodies[v["id"]] = v["body"] if v.get("body") is not None else self._get(v["body_url"]).text
        return label_value(data, bodies, prompt=prompt, label=label, client=self)

    def run(self, version: PromptVersion, variables: Mapping[str, object] | None = None, *,
            stream: bool = False):
        body = version.chat_body(variables, stream=stream)
        headers = version.run_headers(variables)
        if not stream:
            try:
                response = self._http.post("/v1/chat/completions", json=body, headers=headers,
                                           timeout=self.run_timeout)
            except httpx.TransportError as exc:
                raise _transport_error(exc) from exc
            if response.status_code != 200:
                raise _error_from(response, what="POST /v1/chat/completions")
            return _json(response)
        return self._stream(body, headers)

    def _stream(self, body: dict, headers: dict) -> Iterator[dict]:
        try:
            with self._http.stream("POST", "/v1/chat/completions", json=body, headers=headers,
                                   timeout=self.run_timeout) as response:
                if response.status_code != 200:
                    response.read()
                    raise _error_from(response, what="POST /v1/chat/completions")
                yield from _sse_chunks(response.iter_lines())
        except httpx.TransportError as exc:
            raise _transport_error(exc) from exc


class AsyncPromptyard(_Base):
    """The asyncio client: the same contract; background refreshes are tasks
    on the running loop."""

    is_async = True

    def __init__(self, base_url: str, api_key: str, *, ttl: float = DEFAULT_TTL,
                 max_stale: float = DEFAULT_MAX_STALE, timeout: float = DEFAULT_TIMEOUT,
                 run_timeout: float = 120.0, clock: Callable[[], float] = time.monotonic,
                 transport: httpx.AsyncBaseTransport | None = None):
        super().__init__(base_url, api_key, ttl=ttl, max_stale=max_stale, timeout=timeout,
                         run_timeout=run_timeout, clock=clock)
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self._headers, transport=transport)
        self._tasks: set[asyncio.Task] = set()

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await self._http.aclose()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.aclose()

    async def get_prompt(self, prompt: str, label: str = "production", *, fallback=None,
                         user: str | None = None) -> PromptVersion:
        key = (str(prompt), label)
        plan = self.cache.plan(key)
        served = self._serve(plan, user)
        if served is not None:
            if plan.start_refresh:
                task = asyncio.get_running_loop().create_task(self._refresh(key))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            return served
        try:
            return choose(await self._fetch_and_record(key), user, source="server")
        except _NO_ANSWER as exc:
            return self._unavailable(exc, fallback, str(prompt), label)

    async def wait_refreshed(self) -> None:
        """Wait for the background refreshes running now (tests, graceful shutdown)."""
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _refresh(self, key) -> None:
        try:
            await self._fetch_and_record(key, refresh=True)
        except PromptyardError:
            pass
        except BaseException:
            self.cache.failed(key, refresh=True)
            raise

    async def _fetch_and_record(self, key, *, refresh: bool = False) -> LabelValue:
        at = self.cache.clock()
        try:
            version = await self._fetch(*key)
        except _GONE as exc:
            self.cache.answered(key, at=at, gone=exc, refresh=refresh)
            raise
        except BaseException:
            self.cache.failed(key, refresh=refresh)
            raise
        self.cache.answered(key, at=at, value=version, refresh=refresh)
        return version

    async def _get(self, path: str) -> httpx.Response:
        try:
            response = await self._http.get(path, timeout=self.timeout)
        except httpx.TransportError as exc:
            raise _transport_error(exc) from exc
        if response.status_code != 200:
            raise _error_from(response, what=f"GET {path}")
        return response

    async def _call(self, call: Call, url: str | None = None) -> dict:
        try:
            response = await self._http.request(call.method, url or call.path,
                                                params=None if url else call.params, json=call.body,
                                                timeout=self.timeout)
        except httpx.TransportError as exc:
            raise _transport_error(exc) from exc
        if not response.is_success:
            raise _error_from(response, what=f"{call.method} {call.path}")
        return _json(response)

    async def _pages(self, call: Call) -> AsyncIterator[dict]:
        page = await self._call(call)
        while True:
            for item in page["results"]:
                yield item
            if not page.get("next"):
                return
            page = await self._call(call, url=page["next"])

    async def _fetch(self, prompt: str, label: str) -> LabelValue:
        data = _json(await self._get(_label_path(prompt, label)))
        bodies = {}
        for v in versions_of(data):
            body = v.get("body")
            bodies[v["id"]] = body if body is not None else (await self._get(v["body_url"])).text
        return label_value(data, bodies, prompt=prompt, label=label, client=self)

    async def run(self, version: PromptVersion, variables: Mapping[str, object] | None = None, *,
                  stream: bool = False):
        body = version.chat_body(variables, stream=stream)
        headers = version.run_headers(variables)
        if not stream:
            try:
                response = await self._http.post("/v1/chat/completions", json=body, headers=headers,
                                                 timeout=self.run_timeout)
            except httpx.TransportError as exc:
                raise _transport_error(exc) from exc
            if response.status_code != 200:
                raise _error_from(response, what="POST /v1/chat/completions")
            return _json(response)
        return self._stream(body, headers)

    async def _stream(self, body: dict, headers: dict) -> AsyncIterator[dict]:
        try:
            async with self._http.stream("POST", "/v1/chat/completions", json=body, headers=headers,
                                         timeout=self.run_timeout) as response:
                if response.status_code != 200:
                    await response.aread()
                    raise _error_from(response, what="POST /v1/chat/completions")
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        data = line[5:].strip()
                        if data == "[DONE]":
                            return
                        yield json.loads(data)
        except httpx.TransportError as exc:
            raise _transport_error(exc) from exc


def _json(response: httpx.Response) -> dict:
    try:
        return response.json()
    except ValueError as exc:
        raise ServerUnavailable(f"Promptyard answered with a body that is not JSON: {exc}",
                                code="invalid_response", status=response.status_code) from exc
