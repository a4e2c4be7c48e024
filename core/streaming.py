"""Streamed response bodies that stay streamed under ASGI.

Django serves a StreamingHttpResponse built on a *sync* iterator under ASGI by
first collecting the whole iterator into a list (a warning says so): a 20 MB
body or diff is then held whole in memory. `for_request` hands an ASGI request
an async iterator (each chunk read on a worker thread, one at a time) and a
WSGI one (the test client, a WSGI server) the plain iterator.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest

_DONE = object()


async def _aiter(chunks: Iterable[bytes]) -> AsyncIterator[bytes]:
    iterator: Iterator[bytes] = iter(chunks)
    step = sync_to_async(functools.partial(next, iterator, _DONE), thread_sensitive=False)
    while (chunk := await step()) is not _DONE:
        yield chunk


def for_request(request: Any, chunks: Iterable[bytes]) -> Iterable[bytes] | AsyncIterator[bytes]:
    """What to give StreamingHttpResponse for `request`."""
    raw = getattr(request, "_request", request)  # a DRF Request wraps Django's
    return _aiter(chunks) if isinstance(raw, ASGIRequest) else chunks
