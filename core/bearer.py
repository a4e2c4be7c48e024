"""The one parser of `Authorization: Bearer <token>` headers (HTTP and websockets)."""

from __future__ import annotations


class MalformedBearer(ValueError):
    """The header names the Bearer scheme but its token is empty or has spaces."""


def bearer_token(header: str | bytes | None) -> str | None:
    """The token of a Bearer header; None when the header is absent or names
    another scheme; MalformedBearer when it is a Bearer header without one token."""
    if not header:
        return None
    if isinstance(header, bytes):
        header = header.decode("latin-1")
    scheme, _, raw = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    raw = raw.strip()
    if not raw or " " in raw:
        raise MalformedBearer("Malformed Authorization header; expected 'Bearer <api key>'.")
    return raw
