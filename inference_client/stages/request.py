"""The stages on the HTTP request: authenticate (who calls) and parse (what they ask)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from django.middleware.csrf import CsrfViewMiddleware
from rest_framework import exceptions

from accounts.authentication import api_key_lookup
from accounts.keycache import cached_account_tier, cached_key_lookup
from accounts.models import ApiKey
from accounts.selectors import account_tier
from core.bearer import MalformedBearer, bearer_token
from core.error_codes import DomainError
from inference_client.idempotency import body_fingerprint, check_idempotency_key
from inference_client.request_params import ChatRequest, check_body_size, check_prompt_ref, parse_json
from inference_client.stages.call import SessionCaller
from inference_client.threads import run_db


def _csrf_rejected(request) -> bool:
    """Session-authenticated calls come from our own pages: they need the CSRF
    token like any form post (Bearer calls cannot be forged by another site)."""
    # Only the check runs: no view and no response behind it.
    return CsrfViewMiddleware(lambda r: None).process_view(  # type: ignore[arg-type]
        request, None, (), {}) is not None  # type: ignore[arg-type]


def _unauthorized(message: str, code: str) -> DomainError:
    return DomainError(message, code=code, headers={"WWW-Authenticate": "Bearer"})


async def authenticate(request) -> ApiKey | SessionCaller:
    """The API key of a Bearer call, or the signed-in user of a session call
    from our own pages with their account's tier (both cached: accounts.keycache)."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    try:
        raw = bearer_token(header)
    except MalformedBearer as exc:
        raise _unauthorized(str(exc), "malformed_api_key") from None
    if raw is None:
        user = await request.auser() if not header else None
        if user is not None and user.is_authenticated:
            if _csrf_rejected(request):
                raise DomainError("CSRF check failed: send the X-CSRFToken header with a session call.",
                                  code="csrf_failed")
            return SessionCaller(user, await cached_account_tier(user, _tier_from_database))
        raise _unauthorized("You didn't provide an API key. Send it as 'Authorization: Bearer <key>'.",
                            "missing_api_key")
    try:
        return await cached_key_lookup(raw, _key_from_database)
    except exceptions.AuthenticationFailed as exc:
        raise _unauthorized(str(exc.detail), str(exc.get_codes())) from None


async def _key_from_database(raw: str):
    return await run_db(api_key_lookup, raw)


async def _tier_from_database(user) -> str:
    return await run_db(account_tier, user=user)


def parse_body(request, check: Callable[[dict], ChatRequest]) -> tuple[dict, ChatRequest]:
    """The parse stage, first the body: its size, JSON, and ``check`` (the endpoint's rules)."""
    check_body_size(int(request.META.get("CONTENT_LENGTH") or 0))
    body = parse_json(request.read())  # read(): our own size limit, not Django's form limit
    return body, check(body)


class CallHeaders(NamedTuple):
    idempotency_key: str | None
    fingerprint: str | None     # of the body and endpoint, when an Idempotency-Key came
    prompt_ref: dict | None     # X-Prompt-Version / X-Prompt-Label


def parse_headers(request, body: dict, kind: str) -> CallHeaders:
    """The parse stage, then the headers that shape the call (read from META:
    ``request.headers`` builds a mapping of every header first, 10 us a request)."""
    idempotency_key = check_idempotency_key(request.META.get("HTTP_IDEMPOTENCY_KEY"))
    fingerprint = body_fingerprint({**body, "_endpoint": kind}) if idempotency_key else None
    return CallHeaders(idempotency_key, fingerprint, check_prompt_ref(request.META))
