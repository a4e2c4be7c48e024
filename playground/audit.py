"""The audit log: a request id per request, and one function that writes an
event. Callers write events inside the same transaction as the change they
record, so a rolled-back change leaves no event and a committed one always has one."""

from __future__ import annotations

import contextvars
import re
import uuid

from .sharing.models import AuditEvent

_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
# A client-supplied id is kept only if it is short and plain (it ends up in logs and JSON).
_REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


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


def audit_record(*, prompt_id, actor, action: str, target: str, detail: dict | None = None) -> AuditEvent:
    signed_in = actor is not None and getattr(actor, "is_authenticated", False)
    return AuditEvent.objects.create(
        prompt_id=prompt_id, actor=actor if signed_in else None,
        actor_name=actor.get_username() if signed_in else "", action=action, target=target,
        detail=detail or {}, request_id=current_request_id(),
    )
